#include "castline_shim.h"

GType castline_type_string(void) { return G_TYPE_STRING; }
gboolean castline_is_bin(GstElement *element) { return GST_IS_BIN(element); }
