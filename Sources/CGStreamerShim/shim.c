#include "castline_shim.h"

GType castline_type_string(void) { return G_TYPE_STRING; }
GType castline_type_boolean(void) { return G_TYPE_BOOLEAN; }
GType castline_type_int(void) { return G_TYPE_INT; }
GType castline_type_uint(void) { return G_TYPE_UINT; }
GType castline_type_long(void) { return G_TYPE_LONG; }
GType castline_type_ulong(void) { return G_TYPE_ULONG; }
GType castline_type_int64(void) { return G_TYPE_INT64; }
GType castline_type_uint64(void) { return G_TYPE_UINT64; }
GType castline_type_float(void) { return G_TYPE_FLOAT; }
GType castline_type_double(void) { return G_TYPE_DOUBLE; }
GType castline_type_enum(void) { return G_TYPE_ENUM; }
GType castline_type_flags(void) { return G_TYPE_FLAGS; }
GType castline_type_object(void) { return G_TYPE_OBJECT; }
G_GNUC_BEGIN_IGNORE_DEPRECATIONS
GType castline_type_value_array(void) { return G_TYPE_VALUE_ARRAY; }
G_GNUC_END_IGNORE_DEPRECATIONS
GType castline_type_fundamental(GType type) { return G_TYPE_FUNDAMENTAL(type); }

gboolean castline_is_bin(GstElement *element) { return GST_IS_BIN(element); }
gboolean castline_is_a(gpointer instance, GType type) {
  return instance != NULL && G_TYPE_CHECK_INSTANCE_TYPE(instance, type);
}
const gchar *castline_type_name_of(gpointer instance) { return G_OBJECT_TYPE_NAME(instance); }

GParamSpec *castline_find_property(gpointer object, const gchar *name) {
  return g_object_class_find_property(G_OBJECT_GET_CLASS(object), name);
}

G_GNUC_BEGIN_IGNORE_DEPRECATIONS
guint castline_value_array_count(const GValue *value) {
  GValueArray *array = g_value_get_boxed(value);
  return array ? array->n_values : 0;
}
const GValue *castline_value_array_nth(const GValue *value, guint index) {
  GValueArray *array = g_value_get_boxed(value);
  return (array && index < array->n_values) ? g_value_array_get_nth(array, index) : NULL;
}
G_GNUC_END_IGNORE_DEPRECATIONS

GstBuffer *castline_probe_info_buffer(GstPadProbeInfo *info) {
  return (info->type & GST_PAD_PROBE_TYPE_BUFFER) ? GST_PAD_PROBE_INFO_BUFFER(info) : NULL;
}
GstEvent *castline_probe_info_event(GstPadProbeInfo *info) {
  return (info->type & GST_PAD_PROBE_TYPE_EVENT_BOTH) ? GST_PAD_PROBE_INFO_EVENT(info) : NULL;
}
GstQuery *castline_probe_info_query(GstPadProbeInfo *info) {
  return (info->type & GST_PAD_PROBE_TYPE_QUERY_BOTH) ? GST_PAD_PROBE_INFO_QUERY(info) : NULL;
}
GstQuery *castline_query_new_custom(GstStructure *structure) {
  return gst_query_new_custom(GST_QUERY_CUSTOM, structure);
}
GstBuffer *castline_probe_info_make_buffer_writable(GstPadProbeInfo *info) {
  if (!(info->type & GST_PAD_PROBE_TYPE_BUFFER) || info->data == NULL) return NULL;
  GstBuffer *buffer = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
  GST_PAD_PROBE_INFO_DATA(info) = buffer;
  return buffer;
}

gboolean castline_buffer_flag_is_set(GstBuffer *buffer, guint flag) {
  return GST_BUFFER_FLAG_IS_SET(buffer, flag);
}
void castline_buffer_flag_set(GstBuffer *buffer, guint flag, gboolean on) {
  if (on) GST_BUFFER_FLAG_SET(buffer, flag); else GST_BUFFER_FLAG_UNSET(buffer, flag);
}

GstState castline_element_current_state(GstElement *element) {
  GST_OBJECT_LOCK(element);
  GstState state = GST_STATE(element);
  GST_OBJECT_UNLOCK(element);
  return state;
}

GType castline_type_none(void) { return G_TYPE_NONE; }
GType castline_type_pointer(void) { return G_TYPE_POINTER; }
GType castline_type_of(gpointer instance) { return G_TYPE_FROM_INSTANCE(instance); }

// ---- TLSRelay (tls branch) ----
#include <sys/prctl.h>
void castline_set_current_thread_name(const gchar *name) {
  prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

void castline_element_unset_sink_flag(GstElement *element) {
    GST_OBJECT_FLAG_UNSET(element, GST_ELEMENT_FLAG_SINK);
}

#include <gst/video/video.h>

gboolean castline_buffer_first_plane(GstBuffer *buffer, gsize *offset, gint *stride) {
    GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
    if (meta == NULL) return FALSE;
    *offset = meta->offset[0];
    *stride = meta->stride[0];
    return TRUE;
}
