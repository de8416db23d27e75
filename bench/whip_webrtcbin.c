/* The hand-written peer of bench/whip-cpu.sh: a gst-launch pipeline description that ends in a
 * webrtcbin named "w", published to a WHIP endpoint with the least a WHIP client does (the
 * offer once ICE has gathered, POSTed, the answer set), as Meetecho's simple-whip-client does.
 * What castline's WHIP sink also needs against a modern peer is done here too, the same way: an
 * ECDSA P-256 certificate (PEM file) set on the DTLS elements, and the offer's a=fingerprint made
 * the certificate's own SHA-256 (webrtcbin 1.22 makes RSA, which aiortc refuses, and hashes a
 * PEM's certificate and key together).
 *
 * usage: whip_webrtcbin URL CERT_AND_KEY_PEM FINGERPRINT SECONDS 'PIPELINE ... ! webrtcbin name=w ...'
 * Exits 0 after SECONDS of publishing, 1 when the exchange fails. A bench tool, not castline:
 * it blocks webrtcbin's thread on the POST. */
#include <curl/curl.h>
#include <gst/gst.h>
#include <gst/sdp/sdp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Debian 12 ships no gst/webrtc headers (libgstreamer-plugins-bad1.0-dev is not installed):
 * GstWebRTCSessionDescription's public layout and the enum values used, as castline's shim has them. */
typedef struct { gint type; GstSDPMessage *sdp; } SessionDescription;
enum { sdp_answer = 3, gathering_complete = 2 };

static const char *url, *fingerprint;
/* The session's resource (the answer's Location, resolved against the URL): DELETEd at the end. */
static char *resource;
static char *pem;
static GMainLoop *loop;
static int failed;

static size_t header(char *data, size_t size, size_t count, void *unused) {
    size_t length = size * count;
    if (length > 10 && g_ascii_strncasecmp(data, "location:", 9) == 0) {
        gchar *location = g_strstrip(g_strndup(data + 9, length - 9));
        CURLU *resolved = curl_url();
        curl_url_set(resolved, CURLUPART_URL, url, 0);
        curl_url_set(resolved, CURLUPART_URL, location, 0);
        curl_url_get(resolved, CURLUPART_URL, &resource, 0);
        curl_url_cleanup(resolved);
        g_free(location);
    }
    return length;
}

static size_t collect(char *data, size_t size, size_t count, void *into) {
    g_string_append_len(into, data, size * count);
    return size * count;
}

/* Every a=fingerprint line says the certificate's own (FINGERPRINT: "sha-256 AB:CD:..."). */
static char *stamped(const char *sdp) {
    GString *out = g_string_new(NULL);
    gchar **lines = g_strsplit(sdp, "\r\n", -1);
    for (gchar **line = lines; *line && **line; line++) {
        if (g_str_has_prefix(*line, "a=fingerprint:")) g_string_append_printf(out, "a=fingerprint:%s\r\n", fingerprint);
        else g_string_append_printf(out, "%s\r\n", *line);
    }
    g_strfreev(lines);
    return g_string_free(out, FALSE);
}

static void fail(const char *why) {
    fprintf(stderr, "whip_webrtcbin: %s\n", why);
    failed = 1;
    g_main_loop_quit(loop);
}

/* ICE has gathered: the offer (candidates in it) POSTed, the answer set. */
static void send_offer(GstElement *webrtc) {
    GType type = g_type_from_name("GstWebRTCSessionDescription");
    SessionDescription *local = NULL;
    g_object_get(webrtc, "local-description", &local, NULL);
    if (!local) return fail("no local description");
    gchar *text = gst_sdp_message_as_text(local->sdp);
    char *offer = stamped(text);
    g_free(text);
    g_boxed_free(type, local);

    CURL *curl = curl_easy_init();
    GString *answer = g_string_new(NULL);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/sdp");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, offer);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, header);
    long status = 0;
    CURLcode code = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    free(offer);
    if (code != CURLE_OK || status != 201) {
        g_string_free(answer, TRUE);
        return fail("the WHIP endpoint did not answer 201");
    }
    GstSDPMessage *sdp = NULL;
    gst_sdp_message_new_from_text(answer->str, &sdp);
    g_string_free(answer, TRUE);
    SessionDescription given = { sdp_answer, sdp };
    gpointer remote = g_boxed_copy(type, &given);
    gst_sdp_message_free(sdp);
    g_signal_emit_by_name(webrtc, "set-remote-description", remote, NULL);
    g_boxed_free(type, remote);
    fprintf(stderr, "whip_webrtcbin: answered\n");
}

static void on_gathering(GstElement *webrtc, GParamSpec *spec, gpointer data) {
    gint state = 0;
    g_object_get(webrtc, "ice-gathering-state", &state, NULL);
    if (state == gathering_complete) send_offer(webrtc);
}

static void on_offer(GstPromise *promise, gpointer webrtc) {
    const GstStructure *reply = gst_promise_get_reply(promise);
    const GValue *offer = reply ? gst_structure_get_value(reply, "offer") : NULL;
    if (!offer) {
        gst_promise_unref(promise);
        return fail("webrtcbin made no offer");
    }
    g_signal_emit_by_name(webrtc, "set-local-description", g_value_get_boxed(offer), NULL);
    gst_promise_unref(promise);
}

static void on_negotiation_needed(GstElement *webrtc, gpointer data) {
    g_signal_emit_by_name(webrtc, "create-offer", NULL, gst_promise_new_with_change_func(on_offer, webrtc, NULL));
}

static void on_element(GstBin *bin, GstBin *sub, GstElement *element, gpointer data) {
    GstElementFactory *factory = gst_element_get_factory(element);
    if (factory && strcmp(GST_OBJECT_NAME(factory), "dtlssrtpdec") == 0) g_object_set(element, "pem", pem, NULL);
}

static gboolean on_bus(GstBus *bus, GstMessage *message, gpointer data) {
    if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) fail("the pipeline failed");
    return TRUE;
}

static gboolean stop(gpointer data) {
    g_main_loop_quit(loop);
    return G_SOURCE_REMOVE;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: whip_webrtcbin URL CERT_AND_KEY_PEM FINGERPRINT SECONDS PIPELINE\n");
        return 2;
    }
    gst_init(NULL, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    url = argv[1];
    fingerprint = argv[3];
    if (!g_file_get_contents(argv[2], &pem, NULL, NULL)) return 2;
    GError *error = NULL;
    GstElement *pipeline = gst_parse_launch(argv[5], &error);
    if (!pipeline) {
        fprintf(stderr, "whip_webrtcbin: %s\n", error->message);
        return 2;
    }
    GstElement *webrtc = gst_bin_get_by_name(GST_BIN(pipeline), "w");
    if (!webrtc) return 2;
    loop = g_main_loop_new(NULL, FALSE);
    g_signal_connect(webrtc, "on-negotiation-needed", G_CALLBACK(on_negotiation_needed), NULL);
    g_signal_connect(webrtc, "notify::ice-gathering-state", G_CALLBACK(on_gathering), NULL);
    g_signal_connect(webrtc, "deep-element-added", G_CALLBACK(on_element), NULL);
    GstBus *bus = gst_element_get_bus(pipeline);
    gst_bus_add_watch(bus, on_bus, NULL);
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    g_timeout_add_seconds(atoi(argv[4]), stop, NULL);
    g_main_loop_run(loop);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    if (resource) {
        CURL *curl = curl_easy_init();
        curl_easy_setopt(curl, CURLOPT_URL, resource);
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
        curl_easy_perform(curl);
        curl_easy_cleanup(curl);
        curl_free(resource);
    }
    gst_object_unref(bus);
    gst_object_unref(webrtc);
    gst_object_unref(pipeline);
    return failed;
}
