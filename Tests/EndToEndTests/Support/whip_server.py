"""A WHIP endpoint (RFC 9725) played by aiortc, an independent WebRTC stack, for castline's tests.

usage: whip_server.py PORT OUT_FOLDER [TOKEN]
  POST /whip            the offer in, the answer out: 201, Location: whip/session/N (relative);
                        with TOKEN, anything but "Authorization: Bearer TOKEN" is 401.
                        What arrives is recorded to OUT_FOLDER/session-N.mkv (aiortc decodes and
                        re-encodes it: the codecs on the wire are printed instead, from the answer).
  POST /moved           307 to /whip
  DELETE /whip/session/N  ends session N: its recording is closed
  anything else         404
Prints "ready" once listening, then one line per event: "offer N", "codecs N video/H264 audio/opus",
"connected N", "deleted N", "closed N" (the recording is complete).
"""
import asyncio
import os
import re
import sys

from aiohttp import web
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.contrib.media import MediaRecorder

PORT = int(sys.argv[1])
OUT = sys.argv[2]
TOKEN = sys.argv[3] if len(sys.argv) > 3 else None
sessions = {}


def say(line):
    print(line, flush=True)


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


async def whip(request):
    if TOKEN is not None and request.headers.get("Authorization") != f"Bearer {TOKEN}":
        return web.Response(status=401, text="unauthorized")
    if request.content_type != "application/sdp":
        return web.Response(status=415, text="application/sdp only")
    offer = await request.text()
    number = len(sessions) + 1
    say(f"offer {number}")
    pc = RTCPeerConnection()
    recorder = MediaRecorder(os.path.join(OUT, f"session-{number}.mkv"))
    sessions[number] = (pc, recorder)

    @pc.on("track")
    def on_track(track):
        recorder.addTrack(track)

    @pc.on("connectionstatechange")
    async def on_state():
        if pc.connectionState == "connected":
            say(f"connected {number}")
            await recorder.start()

    await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
    answer = await pc.createAnswer()
    await pc.setLocalDescription(answer)
    say(f"codecs {number} " + " ".join(negotiated_codecs(pc.localDescription.sdp)))
    return web.Response(status=201, content_type="application/sdp", text=pc.localDescription.sdp,
                        headers={"Location": f"whip/session/{number}"})


async def moved(request):
    return web.Response(status=307, headers={"Location": "/whip"})


async def delete(request):
    number = int(request.match_info["number"])
    if number not in sessions:
        return web.Response(status=404)
    pc, recorder = sessions.pop(number)
    say(f"deleted {number}")
    await recorder.stop()
    await pc.close()
    say(f"closed {number}")
    return web.Response(status=200)


app = web.Application()
app.router.add_post("/whip", whip)
app.router.add_post("/moved", moved)
app.router.add_delete("/whip/session/{number}", delete)


async def main():
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", PORT).start()
    say("ready")
    await asyncio.Event().wait()


asyncio.run(main())
