"""Drives castline's control page in a headless Chromium (Selenium) against a running castline.

usage: control_page.py steer URL ARTEFACTS   (a tone through delay, gain and stats stages)
       control_page.py token URL ARTEFACTS    (the same behind --control-token-env, the token in CONTROL_TOKEN)

Each check reads the API's own /status to judge what the page did. Exits 0 when every check
passed; prints the first failure and exits 1 otherwise.
"""
import json
import os
import shutil
import sys
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

TOKEN = None


def request(url, method="GET", headers=None):
    req = urllib.request.Request(url, method=method, headers=headers or {})
    if TOKEN:
        req.add_header("Authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(req, timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def status(base):
    code, text = request(base + "status")
    assert code == 200, f"/status: {code} {text}"
    return json.loads(text)


def until(what, condition, timeout=20):
    """Polls `condition` (the driver passed in) until it is true; fails naming `what`."""
    try:
        return WebDriverWait(DRIVER, timeout, poll_frequency=0.1).until(lambda d: condition(d))
    except Exception as error:
        raise AssertionError(f"timed out waiting for {what}") from error


def browser():
    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,1500"]:
        options.add_argument(argument)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


def page_logic():
    """The page's own logic, run where it runs."""
    logic = lambda expression: DRIVER.execute_script(f"return window.CastlinePage.{expression};")
    assert logic("handleFraction(5, 10)") == 0.5
    assert logic("handleFraction(0, 10)") == 1 and logic("handleFraction(30, 10)") == 0
    assert logic("handleFraction(3, 0)") == 1, "nothing held: the handle sits at live"
    assert logic("delayAt(0.25, 20)") == 15 and logic("delayAt(1.5, 20)") == 0 and logic("delayAt(-1, 20)") == 20
    assert logic("delayAt(0.333, 10)") == 6.7, logic("delayAt(0.333, 10)")
    assert logic("formatBehind(12.44)") == "12.4 s behind live" and logic("formatBehind(0)") == "live"
    assert logic("formatFigure('bitrate_kbps', 2999.6)") == "3000 kbit/s"
    assert logic("formatFigure('rms_dbfs', -11.26)") == "-11.3 dBFS"
    assert logic("formatFigure('gain_db', 2)") == "+2.0 dB"
    assert logic("formatFigure('segment_fetch_s', 0.0123)") == "0.012 s" and logic("formatFigure('delay_s', 12.04)") == "12.0 s"
    parsed = logic("parseErrorLine('POST /swap:3:1: bogus: unknown key (known keys: a, b)')")
    assert parsed == {"line": 3, "column": 1, "message": "bogus: unknown key (known keys: a, b)"}, parsed
    assert logic("parseErrorLine('no place here')") is None
    assert logic("parseEventBlock(': keep-alive')") is None
    assert logic("parseEventBlock('data: {\"event\":\"stats\"}')") == {"event": "stats"}
    assert logic("isWaiting('buffering')") and not logic("isWaiting('playing')")
    assert logic("alarmLabel({kind: 'silence', stream: 'audio'})") == "ALARM silence (audio)"
    assert logic("alarmLabel({kind: 'stalled', stream: null})") == "ALARM stalled"
    assert logic("programmeTime(100000, 4, 6).getTime()") == 90000
    assert logic("programmeTime(100000, null, 6)") is None
    assert logic("statsFigure({stats: [{stage: 'a'}, {stage: 'hls', latency_s: 3.5}]}, 'latency_s')") == 3.5


def section():
    return DRIVER.find_element(By.CSS_SELECTOR, "section.pipeline")


def button(title):
    """A player button as a user finds it: by what it says it does."""
    return section().find_element(By.XPATH, f".//button[starts-with(@title, '{title}')]")


def text_of(selector):
    return section().find_element(By.CSS_SELECTOR, selector).text


def steer(base, artefacts):
    until("the page to show the pipeline playing", lambda d: text_of(".state-text") == "playing")
    page_logic()

    # Pause: the API says paused and the delay grows; the page shows what the API says.
    before = status(base)["delay_s"]
    section().find_element(By.CSS_SELECTOR, ".play-pause").click()
    until("/status to say paused", lambda d: status(base)["state"] == "paused")
    until("the page to say paused", lambda d: text_of(".state-text") == "paused" and text_of(".play-pause") == "Play")
    until("the delay to grow while paused", lambda d: status(base)["delay_s"] > before + 1)
    section().find_element(By.CSS_SELECTOR, ".play-pause").click()
    until("/status to say playing", lambda d: status(base)["state"] == "playing")

    # Back 10 s: the delay grows by 10 s, once 10 s more than it is are held.
    until("10 s more history", lambda d: status(base)["available_delay_s"] > status(base)["delay_s"] + 11, timeout=30)
    until("the page to know the history", lambda d: "held" in text_of(".bar-oldest"))
    delay = status(base)["delay_s"]
    button("Back 10 s").click()
    until("the delay to move", lambda d: abs(status(base)["delay_s"] - delay) > 1)
    moved = status(base)["delay_s"] - delay
    assert abs(moved - 10) <= 0.1, f"back 10 s moved the delay by {moved:.3f} s"
    until("the time label to agree with /status",
          lambda d: text_of(".time-label") == f"{status(base)['delay_s']:.1f} s behind live")
    button("Forward 1 s").click()
    until("forward 1 s", lambda d: abs(status(base)["delay_s"] - (delay + 9)) <= 0.1)

    # Drag the bar to its middle: the delay asked is applied, and is half of what is held.
    track = section().find_element(By.CSS_SELECTOR, ".bar-track")
    held = status(base)["available_delay_s"]
    ActionChains(DRIVER).move_to_element(track).click_and_hold().release().perform()
    asked = until("the bar to ask for a delay", lambda d: track.get_attribute("data-asked"))
    asked = float(asked)
    assert abs(asked - held / 2) < 1.5, f"the middle of {held:.1f} s held asked for {asked} s"
    until(f"the delay asked ({asked} s) to be applied", lambda d: abs(status(base)["delay_s"] - asked) <= 0.1)

    # The gain stage's own control.
    gain = section().find_element(By.CSS_SELECTOR, ".command[data-command='gain']")
    gain.find_element(By.CSS_SELECTOR, "button[data-step='1']").click()
    until("gain +1 dB", lambda d: status(base)["gain_db"] == 1)
    until("the page to show +1.0 dB", lambda d: gain.find_element(By.CSS_SELECTOR, ".value").text == "+1.0 dB")

    # The plots hold points, the numbers come from the events.
    until("plotted points", lambda d: any(
        len((line.get_attribute("points") or "").split()) >= 3
        for line in section().find_elements(By.CSS_SELECTOR, ".plot polyline.series")))
    until("live figures", lambda d: "kbit/s" in text_of(".numbers"))

    # A bad file: its error shows at its line, the pipeline plays on.
    section().find_element(By.CSS_SELECTOR, "details.pipeline-file summary").click()
    editor = section().find_element(By.CSS_SELECTOR, "textarea.file")
    until("the running file in the editor", lambda d: "version: 1" in (editor.get_attribute("value") or ""))
    until("the picture of what runs", lambda d: any("gain" in t.text for t in section().find_elements(By.CSS_SELECTOR, ".graph svg text")))
    text = editor.get_attribute("value").rstrip("\n") + "\nbogus: 1\n"
    DRIVER.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'));", editor, text)
    bad_line = text.split("\n").index("bogus: 1") + 1
    position = status(base)["position_s"]
    section().find_element(By.CSS_SELECTOR, "button.apply").click()
    note = until("the error at its line", lambda d: d.find_elements(By.CSS_SELECTOR, f".line-error[data-line='{bad_line}']"))
    assert "bogus" in note[0].text and "unknown key" in note[0].text, note[0].text
    marked = section().find_elements(By.CSS_SELECTOR, ".gutter .error")
    assert [m.text for m in marked] == [str(bad_line)], [m.text for m in marked]
    assert "not applied" in text_of(".apply-result"), text_of(".apply-result")
    until("the pipeline to play on", lambda d: status(base)["state"] == "playing" and status(base)["position_s"] > position + 1)

    # Two pages stay in step: a pause on one shows on the other.
    first = DRIVER.current_window_handle
    DRIVER.switch_to.new_window("tab")
    DRIVER.get(base)
    until("the second page", lambda d: text_of(".state-text") == "playing")
    second = DRIVER.current_window_handle
    DRIVER.switch_to.window(first)
    section().find_element(By.CSS_SELECTOR, ".play-pause").click()
    DRIVER.switch_to.window(second)
    until("the second page to show the pause", lambda d: text_of(".state-text") == "paused")
    section().find_element(By.CSS_SELECTOR, ".play-pause").click()
    until("resumed from the second page", lambda d: status(base)["state"] == "playing")
    DRIVER.switch_to.window(first)
    DRIVER.save_screenshot(os.path.join(artefacts, "control-page.png"))

    # Another site's page may not call the API.
    code, text = request(base + "pause", method="POST", headers={"Origin": "http://example.com"})
    assert code == 403 and "another origin" in text, f"{code} {text}"
    code, text = request(base + "status", headers={"Host": "attacker.example:80"})
    assert code == 403, f"a foreign Host: {code} {text}"
    assert status(base)["state"] == "playing"


def token(base, artefacts):
    form = until("the page to ask for the token",
                 lambda d: d.find_element(By.ID, "token-form").is_displayed() and d.find_element(By.ID, "token-form"))
    DRIVER.find_element(By.ID, "token").send_keys(TOKEN)
    form.find_element(By.CSS_SELECTOR, "button").click()
    until("the page to show the pipeline playing", lambda d: text_of(".state-text") == "playing")
    section().find_element(By.CSS_SELECTOR, ".play-pause").click()
    until("/status to say paused", lambda d: status(base)["state"] == "paused")
    assert TOKEN not in DRIVER.current_url, "the token is in the URL"
    assert TOKEN not in DRIVER.page_source, "the token is in the page"
    DRIVER.save_screenshot(os.path.join(artefacts, "control-page-token.png"))


if __name__ == "__main__":
    mode, base, artefacts = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "token":
        TOKEN = os.environ["CONTROL_TOKEN"]
    os.makedirs(artefacts, exist_ok=True)
    os.environ["SE_AVOID_STATS"] = "true"
    DRIVER = browser()
    try:
        DRIVER.get(base)
        {"steer": steer, "token": token}[mode](base, artefacts)
        logs = [entry for entry in DRIVER.get_log("browser") if entry["level"] == "SEVERE"]
        # The refusals the checks asked for (401 before the token, 422 for the bad file) are not the page's errors.
        asked = ["status of 401", "swap?pipeline=tone - Failed to load resource: the server responded with a status of 422"]
        unexpected = [entry for entry in logs if not any(reason in entry["message"] for reason in asked)]
        assert not unexpected, f"the page logged errors: {unexpected}"
        print("ok")
    except AssertionError as failure:
        DRIVER.save_screenshot(os.path.join(artefacts, f"control-page-{mode}-failed.png"))
        print(f"FAILED: {failure}")
        sys.exit(1)
    finally:
        DRIVER.quit()
