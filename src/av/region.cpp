/* Region layout: inline in region.h, so that it is compiled with the rest
 * of the open path (src/av/av.cpp). */
#include "av/region.h"
