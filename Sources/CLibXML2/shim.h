// libxml2's ICU headers clash with Foundation's; Strata never needs libxml2's ICU support.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlschemas.h>
#include <libxml/entities.h>
#include <libxml/xmlreader.h>
