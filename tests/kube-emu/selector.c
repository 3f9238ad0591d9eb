/*
 * Label and field selectors, with the syntax of apimachinery's labels
 * and fields packages.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/kube-emu/emu.h"

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* A key or value: up to whitespace or one of ",=!()". Caller frees. */
static char *read_word(const char **p)
{
	const char *s = *p;

	while (**p && !strchr(" \t,=!()", **p))
		(*p)++;
	return strndup(s, *p - s);
}

static int add_value(struct emu_sel_req *r, char *v)
{
	char **n = realloc(r->values, (r->nvalues + 1) * sizeof(*n));

	if (!n) {
		free(v);
		return -1;
	}
	r->values = n;
	r->values[r->nvalues++] = v;
	return 0;
}

static void req_release(struct emu_sel_req *r)
{
	size_t i;

	free(r->key);
	for (i = 0; i < r->nvalues; i++)
		free(r->values[i]);
	free(r->values);
}

/* Parse "(a, b, c)" into r->values. */
static int parse_set(struct emu_sel_req *r, const char **p, struct buf *msg)
{
	skip_ws(p);
	if (**p != '(') {
		buf_addf(msg,
			 "unable to parse requirement: found '%s', "
			 "expected: '('",
			 *p);
		return -1;
	}
	(*p)++;
	for (;;) {
		skip_ws(p);
		if (add_value(r, read_word(p)) < 0)
			return -1;
		skip_ws(p);
		if (**p == ')') {
			(*p)++;
			return 0;
		}
		if (**p != ',') {
			buf_addf(msg,
				 "unable to parse requirement: found "
				 "'%s', expected: ',', ')'",
				 **p ? *p : "");
			return -1;
		}
		(*p)++;
	}
}

static int parse_req(struct emu_sel_req *r, const char **p, struct buf *msg)
{
	skip_ws(p);
	if (**p == '!') {
		(*p)++;
		skip_ws(p);
		r->op = EMU_SEL_NOT_EXISTS;
		r->key = read_word(p);
		goto check_key;
	}
	r->key = read_word(p);
	skip_ws(p);
	if (!**p || **p == ',') {
		r->op = EMU_SEL_EXISTS;
	} else if (!strncmp(*p, "==", 2) || **p == '=') {
		*p += (*p)[1] == '=' ? 2 : 1;
		r->op = EMU_SEL_EQ;
	} else if (!strncmp(*p, "!=", 2)) {
		*p += 2;
		r->op = EMU_SEL_NE;
	} else if (!strncmp(*p, "in", 2) && strchr(" \t(", (*p)[2])) {
		*p += 2;
		r->op = EMU_SEL_IN;
		if (parse_set(r, p, msg) < 0)
			return -1;
	} else if (!strncmp(*p, "notin", 5) && strchr(" \t(", (*p)[5])) {
		*p += 5;
		r->op = EMU_SEL_NOTIN;
		if (parse_set(r, p, msg) < 0)
			return -1;
	} else {
		buf_addf(msg,
			 "unable to parse requirement: found '%s', "
			 "expected: in, notin, =, ==, !=, gt, lt",
			 *p);
		return -1;
	}
	if (r->op == EMU_SEL_EQ || r->op == EMU_SEL_NE) {
		skip_ws(p);
		if (add_value(r, read_word(p)) < 0)
			return -1;
	}
check_key:
	if (!r->key || !*r->key) {
		buf_adds(msg, "unable to parse requirement: found '', "
			      "expected: identifier");
		return -1;
	}
	skip_ws(p);
	if (**p && **p != ',') {
		buf_addf(msg, "found '%s', expected: ',' or 'end of string'",
			 *p);
		return -1;
	}
	return 0;
}

int emu_selector_parse(struct emu_selector *sel, const char *s, struct buf *msg)
{
	const char *p = s ? s : "";
	struct emu_sel_req *n;
	int error = 0;

	sel->reqs = NULL;
	sel->len = 0;
	skip_ws(&p);
	while (*p) {
		n = realloc(sel->reqs, (sel->len + 1) * sizeof(*n));
		if (!n) {
			error = -1;
			goto out;
		}
		sel->reqs = n;
		memset(&sel->reqs[sel->len], 0, sizeof(*n));
		sel->len++;
		if ((error = parse_req(&sel->reqs[sel->len - 1], &p, msg)) < 0)
			goto out;
		if (*p == ',')
			p++;
	}
out:
	if (error < 0)
		emu_selector_release(sel);
	return error;
}

static bool in_values(const struct emu_sel_req *r, const char *v)
{
	size_t i;

	for (i = 0; i < r->nvalues; i++)
		if (!strcmp(r->values[i], v))
			return true;
	return false;
}

bool emu_selector_matches(const struct emu_selector *sel, const json_t *labels)
{
	const struct emu_sel_req *r;
	const char *v;
	size_t i;

	for (i = 0; i < sel->len; i++) {
		r = &sel->reqs[i];
		v = json_string_value(json_object_get(labels, r->key));
		switch (r->op) {
		case EMU_SEL_EQ:
		case EMU_SEL_IN:
			if (!v || !in_values(r, v))
				return false;
			break;
		case EMU_SEL_NE:
		case EMU_SEL_NOTIN:
			if (v && in_values(r, v))
				return false;
			break;
		case EMU_SEL_EXISTS:
			if (!v)
				return false;
			break;
		case EMU_SEL_NOT_EXISTS:
			if (v)
				return false;
			break;
		}
	}
	return true;
}

void emu_selector_release(struct emu_selector *sel)
{
	size_t i;

	if (!sel)
		return;
	for (i = 0; i < sel->len; i++)
		req_release(&sel->reqs[i]);
	free(sel->reqs);
	sel->reqs = NULL;
	sel->len = 0;
}

int emu_field_selector_parse(struct emu_field_selector *fs, const char *s,
			     struct buf *msg)
{
	const char *p = s ? s : "", *end, *op;
	char *field = NULL, **slot;
	bool neg;
	size_t oplen;
	int error = 0;

	fs->name = fs->ns = NULL;
	fs->name_negated = fs->ns_negated = false;
	while (*p) {
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		op = p;
		while (op < end && *op != '=' && *op != '!')
			op++;
		neg = op < end && *op == '!';
		if (op == end || (neg && op[1] != '=')) {
			buf_addf(msg,
				 "invalid selector: '%.*s'; can't "
				 "understand '%.*s'",
				 (int)strlen(s), s, (int)(end - p), p);
			error = -1;
			goto out;
		}
		oplen = neg || op[1] == '=' ? 2 : 1;
		free(field);
		field = strndup(p, op - p);
		if (!strcmp(field, "metadata.name")) {
			slot = &fs->name;
			fs->name_negated = neg;
		} else if (!strcmp(field, "metadata.namespace")) {
			slot = &fs->ns;
			fs->ns_negated = neg;
		} else {
			buf_addf(msg,
				 "\"%s\" is not a known field selector: "
				 "only \"metadata.name\", "
				 "\"metadata.namespace\"",
				 field);
			error = -1;
			goto out;
		}
		free(*slot);
		*slot = strndup(op + oplen, end - (op + oplen));
		p = *end ? end + 1 : end;
	}
out:
	free(field);
	if (error < 0)
		emu_field_selector_release(fs);
	return error;
}

void emu_field_selector_release(struct emu_field_selector *fs)
{
	if (!fs)
		return;
	free(fs->name);
	free(fs->ns);
	fs->name = fs->ns = NULL;
}
