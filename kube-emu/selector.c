/*
 * Label and field selectors, with the syntax of apimachinery's labels
 * and fields packages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

/*
 * apimachinery's labels lexer and parser (labels/selector.go), token for
 * token, so that a selector kube refuses is refused with its words.
 */
enum tok {
	T_ERROR,
	T_END,
	T_CLOSE,
	T_COMMA,
	T_NOT,
	T_DEQ,
	T_EQ,
	T_GT,
	T_IDENT,
	T_IN,
	T_LT,
	T_NE,
	T_NOTIN,
	T_OPEN,
};

struct item {
	enum tok tok;
	char *lit;
};

struct parser {
	struct item *items;
	size_t n, pos;
	struct buf *msg;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
	return c && strchr("=!(),><", c);
}

static enum tok symbol_token(const char *s, size_t n)
{
	static const struct {
		const char *text;
		enum tok tok;
	} table[] = {
		{")", T_CLOSE}, {",", T_COMMA}, {"!", T_NOT},	 {"==", T_DEQ},
		{"=", T_EQ},	{">", T_GT},	{"in", T_IN},	 {"<", T_LT},
		{"!=", T_NE},	{"notin", T_NOTIN}, {"(", T_OPEN},
	};
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(*table); i++)
		if (strlen(table[i].text) == n && !strncmp(table[i].text, s, n))
			return table[i].tok;
	return T_ERROR;
}

/* Lexer.Lex: one token from *p. */
static struct item lex(const char **p)
{
	struct item it = {T_END, NULL};
	const char *s, *last_end = NULL;
	enum tok t, last = T_ERROR;
	struct buf b = BUF_INIT;

	while (is_space(**p))
		(*p)++;
	s = *p;
	if (!*s) {
		it.lit = strdup("");
		return it;
	}
	if (is_special(*s)) {
		/* the longest run of special symbols that is a token */
		while (is_special(**p)) {
			(*p)++;
			t = symbol_token(s, (size_t)(*p - s));
			if (t != T_ERROR) {
				last = t;
				last_end = *p;
			} else if (last != T_ERROR) {
				(*p)--;
				break;
			}
		}
		if (last == T_ERROR) {
			buf_addf(&b, "error expected: keyword found '%.*s'",
				 (int)(*p - s), s);
			it.tok = T_ERROR;
			it.lit = buf_detach(&b, NULL);
			return it;
		}
		*p = last_end;
		it.tok = last;
		it.lit = strndup(s, (size_t)(last_end - s));
		return it;
	}
	while (**p && !is_special(**p) && !is_space(**p))
		(*p)++;
	it.lit = strndup(s, (size_t)(*p - s));
	t = symbol_token(s, (size_t)(*p - s));
	it.tok = t == T_IN || t == T_NOTIN ? t : T_IDENT;
	return it;
}

/* `values`: in and notin read as identifiers (ParserContext Values). */
static enum tok look(const struct parser *ps, bool values, const char **lit)
{
	const struct item *it = &ps->items[ps->pos];

	*lit = it->lit ? it->lit : "";
	if (values && (it->tok == T_IN || it->tok == T_NOTIN))
		return T_IDENT;
	return it->tok;
}

static enum tok take(struct parser *ps, bool values, const char **lit)
{
	enum tok t = look(ps, values, lit);

	if (ps->pos + 1 < ps->n)
		ps->pos++;
	return t;
}

static int perr(struct parser *ps, const char *fmt, const char *lit)
{
	buf_addf(ps->msg, fmt, lit);
	return -1;
}

static int add_value(struct emu_sel_req *r, const char *v)
{
	char **n;
	size_t i;

	for (i = 0; i < r->nvalues; i++)
		if (!strcmp(r->values[i], v))
			return 0; /* a set: doubles go */
	n = realloc(r->values, (r->nvalues + 1) * sizeof(*n));
	if (!n)
		return -1;
	r->values = n;
	if (!(r->values[r->nvalues] = strdup(v)))
		return -1;
	r->nvalues++;
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

/* parseIdentifiersList: after "(", up to (not over) ")". */
static int parse_list(struct parser *ps, struct emu_sel_req *r)
{
	const char *lit, *lit2;
	enum tok t, t2;

	for (;;) {
		t = take(ps, true, &lit);
		if (t == T_IDENT) {
			if (add_value(r, lit) < 0)
				return -1;
			t2 = look(ps, true, &lit2);
			if (t2 == T_COMMA)
				continue;
			if (t2 == T_CLOSE)
				return 0;
			buf_addf(ps->msg, "found '%s', expected: ',' or ')'",
				 lit2);
			return -1;
		}
		if (t != T_COMMA)
			return perr(ps, "found '%s', expected: ',', or identifier",
				    lit);
		if (!r->nvalues && add_value(r, "") < 0)
			return -1;
		t2 = look(ps, true, &lit2);
		if (t2 == T_CLOSE)
			return add_value(r, "");
		if (t2 == T_COMMA && add_value(r, "") < 0)
			return -1;
	}
}

static int parse_values(struct parser *ps, struct emu_sel_req *r)
{
	const char *lit;
	enum tok t = take(ps, true, &lit);

	if (t != T_OPEN)
		return perr(ps, "found '%s' expected: '('", lit);
	t = look(ps, true, &lit);
	if (t == T_IDENT || t == T_COMMA) {
		if (parse_list(ps, r) < 0)
			return -1;
		if (take(ps, true, &lit) != T_CLOSE)
			return perr(ps, "found '%s', expected: ')'", lit);
		return 0;
	}
	if (t == T_CLOSE) {
		take(ps, true, &lit);
		return add_value(r, "");
	}
	return perr(ps, "found '%s', expected: ',', ')' or identifier", lit);
}

static int parse_requirement(struct parser *ps, struct emu_sel_req *r)
{
	const char *lit;
	enum tok t = take(ps, true, &lit);
	bool not_exists = false;

	if (t == T_NOT) {
		not_exists = true;
		t = take(ps, true, &lit);
	}
	if (t != T_IDENT)
		return perr(ps, "found '%s', expected: identifier", lit);
	if (!(r->key = strdup(lit)))
		return -1;
	t = look(ps, true, &lit);
	if (not_exists || t == T_END || t == T_COMMA) {
		r->op = not_exists ? EMU_SEL_NOT_EXISTS : EMU_SEL_EXISTS;
		return 0;
	}
	switch (take(ps, false, &lit)) {
	case T_IN:
		r->op = EMU_SEL_IN;
		return parse_values(ps, r);
	case T_NOTIN:
		r->op = EMU_SEL_NOTIN;
		return parse_values(ps, r);
	case T_EQ:
	case T_DEQ:
		r->op = EMU_SEL_EQ;
		break;
	case T_NE:
		r->op = EMU_SEL_NE;
		break;
	case T_GT:
		r->op = EMU_SEL_GT;
		break;
	case T_LT:
		r->op = EMU_SEL_LT;
		break;
	default:
		return perr(ps,
			    "found '%s', expected: in, notin, =, ==, !=, gt, "
			    "lt",
			    lit);
	}
	/* parseExactValue */
	t = look(ps, true, &lit);
	if (t == T_END || t == T_COMMA)
		return add_value(r, "");
	t = take(ps, true, &lit);
	if (t == T_IDENT)
		return add_value(r, lit);
	return perr(ps, "found '%s', expected: identifier", lit);
}

int emu_selector_parse(struct emu_selector *sel, const char *s, struct buf *msg)
{
	struct parser ps = {NULL, 0, 0, msg};
	const char *p = s ? s : "", *lit, *lit2;
	struct emu_sel_req *n;
	struct item it, *items;
	struct buf inner = BUF_INIT;
	enum tok t;
	int error = 0;
	size_t i;

	sel->reqs = NULL;
	sel->len = 0;
	do {
		it = lex(&p);
		items = realloc(ps.items, (ps.n + 1) * sizeof(*items));
		if (!items || !it.lit) {
			free(it.lit);
			error = -1;
			goto out;
		}
		ps.items = items;
		ps.items[ps.n++] = it;
	} while (it.tok != T_END);
	for (;;) {
		t = look(&ps, true, &lit);
		if (t == T_END)
			break;
		if (t != T_IDENT && t != T_NOT) {
			error = perr(&ps,
				     "found '%s', expected: !, identifier, or "
				     "'end of string'",
				     lit);
			goto out;
		}
		n = realloc(sel->reqs, (sel->len + 1) * sizeof(*n));
		if (!n) {
			error = -1;
			goto out;
		}
		sel->reqs = n;
		memset(&sel->reqs[sel->len], 0, sizeof(*n));
		sel->len++;
		ps.msg = &inner;
		if (parse_requirement(&ps, &sel->reqs[sel->len - 1]) < 0) {
			buf_addf(msg, "unable to parse requirement: %s",
				 buf_cstr(&inner));
			error = -1;
			goto out;
		}
		ps.msg = msg;
		t = take(&ps, true, &lit);
		if (t == T_END)
			break;
		if (t != T_COMMA) {
			error = perr(&ps,
				     "found '%s', expected: ',' or 'end of "
				     "string'",
				     lit);
			goto out;
		}
		t = look(&ps, true, &lit2);
		if (t != T_IDENT && t != T_NOT) {
			error = perr(&ps,
				     "found '%s', expected: identifier after ','",
				     lit2);
			goto out;
		}
	}
out:
	for (i = 0; i < ps.n; i++)
		free(ps.items[i].lit);
	free(ps.items);
	buf_release(&inner);
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

static bool parse_int(const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	return *s && !*end && !errno;
}

static bool int_cmp_ok(const struct emu_sel_req *r, const char *v)
{
	long long have, want;

	if (!parse_int(v, &have) || !parse_int(r->values[0], &want))
		return false;
	return r->op == EMU_SEL_GT ? have > want : have < want;
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
		case EMU_SEL_GT:
		case EMU_SEL_LT:
			/* both sides integers, as Requirement.Matches */
			if (!v || !r->nvalues || !int_cmp_ok(r, v))
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
