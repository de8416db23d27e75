"""A WHIP (RFC 9725) and WHEP endpoint played by aiortc, an independent WebRTC stack, for castline's tests.

usage: whip_server.py PORT OUT_FOLDER [--token TOKEN] [--source MEDIA_FILE]
  POST /whip            the offer in, the answer out: 201, Location: whip/session/N (relative);
                        with --token, anything but "Authorization: Bearer TOKEN" is 401 (WHEP too).
                        aiortc decodes what arrives: the sound is written to OUT_FOLDER/session-N.wav,
                        the pictures are counted (the codecs on the wire are printed, from the answer).
  POST /whep            a player's offer in, and sent back, as aiortc encodes it: what the latest WHIP
                        session publishes (relayed, as a server does), else MEDIA_FILE (looped);
                        201, Location: whep/session/N; 404 while there is neither (as MediaMTX answers)
  POST /moved           307 to /whip
  POST /silent/whep     reads the offer, says "silent N" (N counts them), never answers
  POST /mute/whep       answers a player's offer (201), then sends nothing
  DELETE /whip/session/N, /whep/session/N  ends session N
  anything else         404
Says on stderr "ready" once listening, then one line per event: "offer N", "codecs N audio/opus video/H264",
"connected N", "pair N remote TYPE" (the far end's candidate ICE chose: host, srflx, relay), "deleted N", "video N FRAMES WxH", "closed N" (the WAV file is complete).
aiortc's MediaRecorder is not used: its re-encoding crashed the process now and then (PyAV).
"""
import argparse
import asyncio
import itertools
import faulthandler
import os
import re
import sys
import wave

from aiohttp import web
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.contrib.media import MediaPlayer, MediaRelay
from aiortc.mediastreams import MediaStreamError

faulthandler.enable()
arguments = argparse.ArgumentParser()
arguments.add_argument("port", type=int)
arguments.add_argument("out")
arguments.add_argument("--token")
arguments.add_argument("--source")
options = arguments.parse_args()
PORT, OUT, TOKEN = options.port, options.out, options.token
sessions = {}
relay = MediaRelay()
published = {}  # kind: the track the latest WHIP session publishes
numbers = itertools.count(1)


def say(line):
    print(line, file=sys.stderr, flush=True)


def negotiated_codecs(sdp):
    """The first codec of each m-line of an answer: what the offerer will send."""
    codecs = []
    for section in re.split(r"\r?\nm=", sdp)[1:]:
        kind = section.split(" ", 1)[0]
        payloads = section.split("\n", 1)[0].split()[3:]
        names = dict(re.findall(r"a=rtpmap:(\d+) ([^/\r\n]+)", section))
        if payloads and payloads[0] in names:
            codecs.append(f"{kind}/{names[payloads[0]]}")
    return codecs


def refused(request):
    """401 for a request without the token, when there is one."""
    if TOKEN is not None and request.headers.get("Authorization") != f"Bearer {TOKEN}":
        return web.Response(status=401, text="unauthorized")
    return None


async def open_session(request, session):
    """A new numbered session: its peer connection, told "connected", with the offer set."""
    offer = await request.text()
    number = next(numbers)
    say(f"offer {number}")
    pc = RTCPeerConnection()
    session["pc"] = pc
    sessions[number] = session

    @pc.on("connectionstatechange")
    async def on_state():
        if pc.connectionState == "connected":
            say(f"connected {number}")
            say(f"pair {number} remote {remote_candidate_type(pc)}")

    return pc, number, offer


def remote_candidate_type(pc):
    """The far end's candidate in the pair ICE nominated (host, srflx, relay): how its media came."""
    for transceiver in pc.getTransceivers():
        connection = transceiver.receiver.transport.transport._connection
        for pair in connection._nominated.values():
            return pair.remote_candidate.type
    return "none"


async def answer(pc, number, offer, kind, send=None):
    """The offer set (then `send(transceivers)` adds what this end sends), the answer made: 201 with
    it and the session's relative Location."""
    await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
    if send is not None:
        send(pc.getTransceivers())
    made = await pc.createAnswer()
    await pc.setLocalDescription(made)
    say(f"codecs {number} " + " ".join(negotiated_codecs(pc.localDescription.sdp)))
    return web.Response(status=201, content_type="application/sdp", text=pc.localDescription.sdp,
                        headers={"Location": f"{kind}/session/{number}"})


async def whip(request):
    if (refusal := refused(request)) is not None:
        return refusal
    if request.content_type != "application/sdp":
        return web.Response(status=415, text="application/sdp only")
    session = {"tasks": [], "video": [0, ""]}
    pc, number, offer = await open_session(request, session)

    @pc.on("track")
    def on_track(track):
        published[track.kind] = track
        session["tasks"].append(asyncio.ensure_future(receive(relay.subscribe(track), number, session)))

    return await answer(pc, number, offer, "whip")


async def whep(request):
    if (refusal := refused(request)) is not None:
        return refusal
    mute = request.path == "/mute/whep"
    if not published and not options.source and not mute:
        return web.Response(status=404, text="no stream is published")
    player = MediaPlayer(options.source, loop=True) if options.source and not published and not mute else None
    pc, number, offer = await open_session(request, {"tasks": [], "video": [0, ""], "player": player})

    def send(transceivers):
        """Each of the player's transceivers given what this endpoint sends (nothing, when mute)."""
        for transceiver in transceivers:
            if mute:
                track = None
            elif player is not None:
                track = player.audio if transceiver.kind == "audio" else player.video
            else:
                track = relay.subscribe(published[transceiver.kind]) if transceiver.kind in published else None
            if track is not None:
                pc.addTrack(track)

    return await answer(pc, number, offer, "whep", send)


silences = itertools.count(1)


async def silent(request):
    await request.text()
    say(f"silent {next(silences)}")
    await asyncio.Event().wait()


async def moved(request):
    return web.Response(status=307, headers={"Location": "/whip"})


async def receive(track, number, session):
    """Decoded frames of one track until it ends: sound into a WAV file, pictures counted."""
    out = None
    try:
        while True:
            frame = await track.recv()
            if track.kind == "video":
                session["video"] = [session["video"][0] + 1, f"{frame.width}x{frame.height}"]
                continue
            if out is None:
                out = wave.open(os.path.join(OUT, f"session-{number}.wav"), "wb")
                out.setnchannels(len(frame.layout.channels))
                out.setsampwidth(2)
                out.setframerate(frame.sample_rate)
            # aiortc's Opus decoder gives packed signed 16-bit samples: the first plane holds them all.
            out.writeframes(bytes(frame.planes[0])[: frame.samples * len(frame.layout.channels) * 2])
    except (MediaStreamError, asyncio.CancelledError):
        pass
    finally:
        if out is not None:
            out.close()


async def delete(request):
    number = int(request.match_info["number"])
    if number not in sessions:
        return web.Response(status=404)
    session = sessions.pop(number)
    say(f"deleted {number}")
    await session["pc"].close()
    player = session.get("player")
    for track in (player.audio, player.video) if player is not None else ():
        if track is not None:
            track.stop()
    await asyncio.gather(*session["tasks"], return_exceptions=True)
    frames, size = session["video"]
    say(f"video {number} {frames} {size}")
    say(f"closed {number}")
    return web.Response(status=200)


app = web.Application()
app.router.add_post("/whip", whip)
app.router.add_post("/moved", moved)
app.router.add_post("/whep", whep)
app.router.add_post("/silent/whep", silent)
app.router.add_post("/mute/whep", whep)
app.router.add_delete("/mute/whep/session/{number}", delete)
app.router.add_delete("/whip/session/{number}", delete)
app.router.add_delete("/whep/session/{number}", delete)


async def main():
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", PORT).start()
    say("ready")
    await asyncio.Event().wait()


asyncio.run(main())
