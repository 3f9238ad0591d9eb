#include "renderers/render.h"
