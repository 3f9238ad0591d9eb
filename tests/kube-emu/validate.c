/*
 * Object name rules, with kube-apiserver's messages.
 */
#include <string.h>

#include "tests/kube-emu/emu.h"

static const char subdomain_msg[] =
	"a lowercase RFC 1123 subdomain must consist of lower case "
	"alphanumeric characters, '-' or '.', and must start and end with an "
	"alphanumeric character (e.g. 'example.com', regex used for "
	"validation is "
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
static const char label_msg[] =
	"a lowercase RFC 1123 label must consist of lower case alphanumeric "
	"characters or '-', and must start and end with an alphanumeric "
	"character (e.g. 'my-name',  or '123-abc', regex used for validation "
	"is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
static const char dns1035_msg[] =
	"a DNS-1035 label must consist of lower case alphanumeric characters "
	"or '-', start with an alphabetic character, and end with an "
	"alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used "
	"for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One RFC 1123 label in s[0..len). */
static bool label_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (i = 0; i < len; i++)
		if (!is_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

int emu_name_check(const char *name, enum emu_name_rule rule, const char **why)
{
	size_t len = strlen(name);
	const char *p, *dot;

	switch (rule) {
	case EMU_NAME_PATH:
		if (!strcmp(name, "."))
			*why = "may not be '.'";
		else if (!strcmp(name, ".."))
			*why = "may not be '..'";
		else if (strchr(name, '/'))
			*why = "may not contain '/'";
		else if (strchr(name, '%'))
			*why = "may not contain '%'";
		else
			return 0;
		return -1;
	case EMU_NAME_LABEL:
	case EMU_NAME_DNS1035:
		if (len > 63) {
			*why = "must be no more than 63 characters";
			return -1;
		}
		if (!label_ok(name, len) ||
		    (rule == EMU_NAME_DNS1035 &&
		     !(name[0] >= 'a' && name[0] <= 'z'))) {
			*why = rule == EMU_NAME_LABEL ? label_msg : dns1035_msg;
			return -1;
		}
		return 0;
	case EMU_NAME_SUBDOMAIN:
		if (len > 253) {
			*why = "must be no more than 253 characters";
			return -1;
		}
		for (p = name;; p = dot + 1) {
			dot = strchr(p, '.');
			if (!label_ok(p, dot ? (size_t)(dot - p) : strlen(p))) {
				*why = subdomain_msg;
				return -1;
			}
			if (!dot)
				break;
		}
		return 0;
	}
	return 0;
}

json_t *emu_validate_object(const struct emu_resource *res, const json_t *obj)
{
	(void)res;
	(void)obj;
	return NULL;
}
