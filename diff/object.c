#include "diff/diff.h"
