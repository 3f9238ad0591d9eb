/*
 * Failure Status objects, shaped as kube-apiserver writes them (empty
 * details fields are omitted, as Go's omitempty does).
 */
#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

json_t *emu_status_new(int code, const char *reason, const char *message,
		       const char *name, const char *group, const char *kind)
{
	json_t *st, *details = NULL;

	st = json_pack("{s:s, s:s, s:{}, s:s, s:s}", "kind", "Status",
		       "apiVersion", "v1", "metadata", "status", "Failure",
		       "message", message);
	if (!st)
		return NULL;
	if (reason)
		json_object_set_new(st, "reason", json_string(reason));
	if ((name && *name) || (group && *group) || kind) {
		details = json_object();
		if (name && *name)
			json_object_set_new(details, "name", json_string(name));
		if (group && *group)
			json_object_set_new(details, "group",
					    json_string(group));
		if (kind)
			json_object_set_new(details, "kind", json_string(kind));
		json_object_set_new(st, "details", details);
	}
	json_object_set_new(st, "code", json_integer(code));
	return st;
}
