// What Swift cannot call directly: macros, type checks and deprecated GValueArray. Keep it tiny.
#pragma once
#include <gst/gst.h>

// Fundamental and boxed GTypes (G_TYPE_* are macros Swift does not import).
GType castline_type_string(void);
GType castline_type_boolean(void);
GType castline_type_int(void);
GType castline_type_uint(void);
GType castline_type_long(void);
GType castline_type_ulong(void);
GType castline_type_int64(void);
GType castline_type_uint64(void);
GType castline_type_float(void);
GType castline_type_double(void);
GType castline_type_enum(void);
GType castline_type_flags(void);
GType castline_type_object(void);
GType castline_type_value_array(void);
GType castline_type_fundamental(GType type);

gboolean castline_is_bin(GstElement *element);
// G_TYPE_CHECK_INSTANCE_TYPE for any GTypeInstance.
gboolean castline_is_a(gpointer instance, GType type);
const gchar *castline_type_name_of(gpointer instance);

// g_object_class_find_property(G_OBJECT_GET_CLASS(object), name)
GParamSpec *castline_find_property(gpointer object, const gchar *name);

// GValueArray is deprecated but still what `level` posts; read it here without warnings.
guint castline_value_array_count(const GValue *value);
const GValue *castline_value_array_nth(const GValue *value, guint index);

// GstPadProbeInfo accessors (GST_PAD_PROBE_INFO_* macros).
GstBuffer *castline_probe_info_buffer(GstPadProbeInfo *info);
GstEvent *castline_probe_info_event(GstPadProbeInfo *info);
GstQuery *castline_probe_info_query(GstPadProbeInfo *info);
GstQuery *castline_query_new_custom(GstStructure *structure);
// gst_buffer_make_writable on the probe's buffer, storing the result back into the info.
GstBuffer *castline_probe_info_make_buffer_writable(GstPadProbeInfo *info);

// GstBuffer flags (GST_BUFFER_FLAG_* macros).
gboolean castline_buffer_flag_is_set(GstBuffer *buffer, guint flag);
void castline_buffer_flag_set(GstBuffer *buffer, guint flag, gboolean on);

// Unsets GST_ELEMENT_FLAG_SINK: the bin then neither waits for the element's
// end-of-stream nor its preroll (a sink that feeds media elsewhere, like an appsink into a history).
void castline_element_unset_sink_flag(GstElement *element);

// GST_STATE(element): the element's current state without waiting.
GstState castline_element_current_state(GstElement *element);

GType castline_type_none(void);
GType castline_type_pointer(void);
GType castline_type_of(gpointer instance);

// ---- TLSRelay (tls branch) ----
// Names the calling thread (prctl PR_SET_NAME, 15 characters); GLib 2.74 does not name its threads here.
void castline_set_current_thread_name(const gchar *name);

// The first plane's place in a video buffer, from its GstVideoMeta (a decoder may pad rows);
// FALSE when the buffer has none (then the caps' default layout holds).
gboolean castline_buffer_first_plane(GstBuffer *buffer, gsize *offset, gint *stride);

// ---- webrtcbin (castline_webrtc.c) ----
// Signals with GstPromise and GstWebRTCSessionDescription arguments, which Swift cannot emit:
// without the gst-plugins-bad headers, whose session description is two public fields.
// `ready` gets the local description's SDP (g_free it) once ICE gathering is complete, or NULL
// and an error text when the offer could not be made.
typedef void (*castline_sdp_ready)(gchar *sdp, const gchar *error, gpointer data);
// Makes an offer, sets it as the local description, and calls `ready` once gathering is complete.
void castline_webrtc_offer(GstElement *webrtc, castline_sdp_ready ready, gpointer data);
// Sets an answer as the remote description; FALSE (and `error`, g_free it) when it does not parse.
gboolean castline_webrtc_set_answer(GstElement *webrtc, const gchar *sdp, gchar **error);
// Adds a receive-only transceiver offering `caps` (one structure per codec, in order of preference).
gboolean castline_webrtc_add_receiver(GstElement *webrtc, GstCaps *caps);
/// webrtcbin's add-turn-server: a relay that, unlike the turn-server property, no dump of the element shows.
gboolean castline_webrtc_add_turn_server(GstElement *webrtc, const gchar *uri);
// The transceiver behind a webrtcbin sink or src pad: its direction, by nick ("sendonly", "recvonly").
gboolean castline_webrtc_set_direction(GstPad *pad, const gchar *direction);
// webrtcbin's "get-stats": `ready` gets a copy of the reply (gst_structure_free it), or NULL,
// on webrtcbin's thread.
typedef void (*castline_stats_ready)(GstStructure *stats, gpointer data);
void castline_webrtc_stats(GstElement *webrtc, castline_stats_ready ready, gpointer data);
