// What Swift cannot call directly: macros and type checks. Keep it tiny.
#pragma once
#include <gst/gst.h>

GType castline_type_string(void);
gboolean castline_is_bin(GstElement *element);
