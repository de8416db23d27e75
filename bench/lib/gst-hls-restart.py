#!/usr/bin/python3
# castline's HLS restart without castline (used by bench/hls-outage-cycles.sh): uridecodebin3
# on a live HLS URL into a clocked fakesink; on an error, 1 s later the decoder is set to NULL,
# removed, and a fresh one linked to the same queue. Prints the lines the bench waits for.
import sys, gi
gi.require_version('Gst', '1.0')
from gi.repository import Gst, GLib
Gst.init(None)
url = sys.argv[1]
pipe = Gst.Pipeline.new('p')
queue = Gst.ElementFactory.make('queue')
conv = Gst.ElementFactory.make('audioconvert')
sink = Gst.ElementFactory.make('fakesink')
sink.set_property('sync', True)
for e in (queue, conv, sink): pipe.add(e)
queue.link(conv); conv.link(sink)
state = {'dec': None, 'restarting': False, 'started': False}
def on_pad(dec, pad):
    caps = pad.get_current_caps() or pad.query_caps(None)
    if caps.to_string().startswith('audio') and not queue.get_static_pad('sink').is_linked():
        pad.link(queue.get_static_pad('sink'))
def make():
    d = Gst.ElementFactory.make('uridecodebin3')
    d.set_property('uri', url)
    d.set_property('caps', Gst.Caps.from_string('audio/x-raw'))
    d.connect('pad-added', on_pad)
    pipe.add(d)
    state['dec'] = d
    return d
def restart():
    old = state['dec']
    old.set_state(Gst.State.NULL)
    pipe.remove(old)
    d = make()
    d.sync_state_with_parent()
    state['restarting'] = False
    print('reconnected after 1 attempt', file=sys.stderr, flush=True)
    return False
def on_msg(bus, msg):
    if msg.type == Gst.MessageType.ERROR:
        if not state['restarting']:
            state['restarting'] = True
            print('connection lost; reconnecting in 1.0 s', file=sys.stderr, flush=True)
            GLib.timeout_add(1000, restart)
    elif msg.type == Gst.MessageType.STREAM_START and not state['started']:
        state['started'] = True
        print('stream started', file=sys.stderr, flush=True)
    return True
make()
bus = pipe.get_bus(); bus.add_signal_watch(); bus.connect('message', on_msg)
pipe.set_state(Gst.State.PLAYING)
loop = GLib.MainLoop()
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, 2, lambda: (loop.quit(), False)[1])
loop.run()
pipe.set_state(Gst.State.NULL)
