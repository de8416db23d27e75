#include "castline_shim.h"
#include <gst/sdp/sdp.h>
#include <string.h>

// GstWebRTCSessionDescription's public layout (gst/webrtc/rtptransceiver.h, stable since 1.14).
typedef struct { gint type; GstSDPMessage *sdp; } castline_session_description;
enum { castline_sdp_offer = 1, castline_sdp_answer = 3 };
enum { castline_gathering_complete = 2 };
enum { castline_recvonly = 3 };  // GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY

typedef struct {
    GstElement *webrtc;
    castline_sdp_ready ready;
    gpointer data;
    gulong handler;
    gboolean told;
} offer_context;

static gchar *local_sdp(GstElement *webrtc) {
    castline_session_description *description = NULL;
    g_object_get(webrtc, "local-description", &description, NULL);
    if (description == NULL) return NULL;
    gchar *text = gst_sdp_message_as_text(description->sdp);
    GType type = g_type_from_name("GstWebRTCSessionDescription");
    if (type) g_boxed_free(type, description);
    return text;
}

// Once: the SDP when gathering is complete. Returns TRUE when told.
static gboolean tell_if_gathered(offer_context *context) {
    gint state = 0;
    g_object_get(context->webrtc, "ice-gathering-state", &state, NULL);
    if (state != castline_gathering_complete || context->told) return FALSE;
    context->told = TRUE;
    gchar *sdp = local_sdp(context->webrtc);
    context->ready(sdp, sdp ? NULL : "webrtcbin has no local description", context->data);
    return TRUE;
}

static void on_gathering_state(GstElement *webrtc, GParamSpec *spec, gpointer data) {
    (void)webrtc; (void)spec;
    offer_context *context = data;
    if (tell_if_gathered(context)) {
        g_signal_handler_disconnect(context->webrtc, context->handler);
    }
}

static void free_context(gpointer data, GClosure *closure) {
    (void)closure;
    offer_context *context = data;
    gst_object_unref(context->webrtc);
    g_free(context);
}

static void on_offer(GstPromise *promise, gpointer data) {
    offer_context *context = data;
    const GstStructure *reply = gst_promise_get_reply(promise);
    const GValue *value = reply ? gst_structure_get_value(reply, "offer") : NULL;
    if (value == NULL) {
        GError *error = NULL;
        if (reply) gst_structure_get(reply, "error", G_TYPE_ERROR, &error, NULL);
        context->ready(NULL, error ? error->message : "webrtcbin made no offer", context->data);
        if (error) g_error_free(error);
        gst_promise_unref(promise);
        gst_object_unref(context->webrtc);
        g_free(context);
        return;
    }
    g_signal_emit_by_name(context->webrtc, "set-local-description", g_value_get_boxed(value), NULL);
    gst_promise_unref(promise);
    // Gathering may already be over, or end later: told once either way.
    context->handler = g_signal_connect_data(context->webrtc, "notify::ice-gathering-state", G_CALLBACK(on_gathering_state),
                                             context, free_context, 0);
    if (tell_if_gathered(context)) g_signal_handler_disconnect(context->webrtc, context->handler);
}

void castline_webrtc_offer(GstElement *webrtc, castline_sdp_ready ready, gpointer data) {
    offer_context *context = g_new0(offer_context, 1);
    context->webrtc = gst_object_ref(webrtc);
    context->ready = ready;
    context->data = data;
    GstPromise *promise = gst_promise_new_with_change_func(on_offer, context, NULL);
    g_signal_emit_by_name(webrtc, "create-offer", NULL, promise);
}

gboolean castline_webrtc_set_answer(GstElement *webrtc, const gchar *sdp, gchar **error) {
    GstSDPMessage *message = NULL;
    gst_sdp_message_new(&message);
    if (gst_sdp_message_parse_buffer((const guint8 *)sdp, strlen(sdp), message) != GST_SDP_OK
        || gst_sdp_message_medias_len(message) == 0) {
        gst_sdp_message_free(message);
        *error = g_strdup("the answer is not SDP with media");
        return FALSE;
    }
    GType type = g_type_from_name("GstWebRTCSessionDescription");
    if (!type) {
        gst_sdp_message_free(message);
        *error = g_strdup("webrtcbin is not loaded");
        return FALSE;
    }
    castline_session_description given = { castline_sdp_answer, message };
    // The boxed copy is webrtcbin's own (gst_webrtc_session_description_copy).
    gpointer answer = g_boxed_copy(type, &given);
    gst_sdp_message_free(message);
    g_signal_emit_by_name(webrtc, "set-remote-description", answer, NULL);
    g_boxed_free(type, answer);
    return TRUE;
}

gboolean castline_webrtc_add_turn_server(GstElement *webrtc, const gchar *uri) {
    gboolean added = FALSE;
    g_signal_emit_by_name(webrtc, "add-turn-server", uri, &added);
    return added;
}

gboolean castline_webrtc_add_receiver(GstElement *webrtc, GstCaps *caps) {
    GObject *transceiver = NULL;
    g_signal_emit_by_name(webrtc, "add-transceiver", castline_recvonly, caps, &transceiver);
    if (transceiver == NULL) return FALSE;
    g_object_unref(transceiver);
    return TRUE;
}

gboolean castline_webrtc_set_direction(GstPad *pad, const gchar *direction) {
    GObject *transceiver = NULL;
    g_object_get(pad, "transceiver", &transceiver, NULL);
    if (transceiver == NULL) return FALSE;
    gst_util_set_object_arg(transceiver, "direction", direction);
    g_object_unref(transceiver);
    return TRUE;
}

typedef struct {
    castline_stats_ready ready;
    gpointer data;
} stats_context;

static void on_stats(GstPromise *promise, gpointer data) {
    stats_context *context = data;
    const GstStructure *reply = gst_promise_wait(promise) == GST_PROMISE_RESULT_REPLIED ? gst_promise_get_reply(promise) : NULL;
    context->ready(reply ? gst_structure_copy(reply) : NULL, context->data);
    gst_promise_unref(promise);
    g_free(context);
}

void castline_webrtc_stats(GstElement *webrtc, castline_stats_ready ready, gpointer data) {
    stats_context *context = g_new0(stats_context, 1);
    context->ready = ready;
    context->data = data;
    g_signal_emit_by_name(webrtc, "get-stats", NULL, gst_promise_new_with_change_func(on_stats, context, NULL));
}
