/*
 * renderers/yaml.c: decode a manifest stream (YAML or JSON) into JSON values
 * the way `kubectl apply -f` and the API server do, i.e. sigs.k8s.io/yaml on
 * go-yaml v2: YAML 1.1 scalar resolution, then conversion to JSON.
 *
 * This is the only file that includes <yaml.h>. It uses libyaml's event API
 * (never the document API) and builds the jansson tree itself with an
 * explicit stack, so the C stack depth does not depend on the input; the
 * depth of every document is capped by RENDER_MAX_DEPTH and the nodes that
 * aliases may produce by RENDER_MAX_ALIAS_NODES.
 *
 * Where go-yaml v2 and sigs.k8s.io/yaml differ from what a JSON tree can
 * hold, the choices are:
 *
 *   - .inf/.nan values are errors (encoding/json refuses them too).
 *   - an integer in [2^63, 2^64) becomes a real (jansson has no uint64).
 *   - a float that is integral and fits in int64 becomes an integer:
 *     encoding/json prints float64(1000) as `1000`, so that is what reaches
 *     the API server.
 *   - a NUL character inside a string (from "\0", !!binary or JSON "\u0000")
 *     is an error: the rest of syncd works with C strings.
 *   - !!binary must decode to valid UTF-8 (JSON strings must be).
 *   - duplicate keys are errors (as in go-yaml's strict mode), and keys that
 *     come from a merge (<<) never override an explicit key of the mapping,
 *     wherever the explicit key is written (the YAML merge spec; go-yaml v2
 *     lets a later << override an earlier explicit key).
 *   - JSON integers beyond int64 are errors (jansson cannot hold them).
 *   - a null map key is an error, as in sigs.k8s.io/yaml ("unsupported
 *     map key of type"); a uint64 key becomes its decimal text (there
 *     sigs.k8s.io/yaml refuses it too).
 *   - a tag or collection on a mapping or sequence must fit it (!!seq on a
 *     mapping is an error; go-yaml v2 ignores such tags).
 *
 * libyaml's scanner and go-yaml's Go port of it disagree on a few flow
 * corner cases: "[a:]" is an error here (go-yaml reads "a:"), and "[!, x]"
 * is ["", "x"] here (an error or ["x"] for go-yaml).
 *
 * Number parsing uses strtod()/snprintf(): syncd never changes LC_NUMERIC.
 */
#include "renderers/render.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "diff/diff.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/err.h"

#include "util/banned.h" /* last */

#define STD_TAG_PREFIX "tag:yaml.org,2002:"

/* Longest piece of input quoted in a message. */
#define EXCERPT_MAX 80

/* ------------------------------------------------------------------ */
/* Messages and positions                                              */

/*
 * Record "<name>:<line>:<column>: <message>" in err and return code.
 */
static int fail_at(struct err *err, int code, const char *name, unsigned line,
		   unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static int fail_at(struct err *err, int code, const char *name, unsigned line,
		   unsigned col, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	if (buf_vaddf(&msg, fmt, ap) < 0)
		buf_reset(&msg);
	va_end(ap);
	err_set(err, code, "%s:%u:%u: %s", name, line, col,
		msg.len ? msg.ptr : "out of memory while reporting an error");
	buf_release(&msg);
	return code;
}

/*
 * A short, printable copy of s[0..n) for messages: at most EXCERPT_MAX
 * bytes cut on a UTF-8 boundary, "..." when cut.
 */
static const char *excerpt(char *out, size_t size, const char *s, size_t n)
{
	size_t take = n;

	if (take > size - 4) {
		take = size - 4;
		while (take && ((unsigned char)s[take] & 0xC0) == 0x80)
			take--;
	}
	memcpy(out, s, take);
	if (take < n)
		memcpy(out + take, "...", 4);
	else
		out[take] = '\0';
	return out;
}

/*
 * 1-based line and column (in characters) of byte `off` of data. A line
 * ends at "\n", "\r\n" or a lone "\r", as for libyaml.
 */
static void offset_position(const char *data, size_t len, size_t off,
			    unsigned *line, unsigned *col)
{
	unsigned l = 1, c = 1;

	if (off > len)
		off = len;
	for (size_t i = 0; i < off; i++) {
		unsigned char b = (unsigned char)data[i];

		if (b == '\n' ||
		    (b == '\r' && (i + 1 >= len || data[i + 1] != '\n'))) {
			l++;
			c = 1;
		} else if ((b & 0xC0) != 0x80 && b != '\r') {
			c++;
		}
	}
	*line = l;
	*col = c;
}

/* ------------------------------------------------------------------ */
/* Documents                                                           */

void render_docs_release(struct render_docs *docs)
{
	if (!docs)
		return;
	for (size_t i = 0; i < docs->len; i++)
		json_decref(docs->items[i].value);
	free(docs->items);
	docs->items = NULL;
	docs->len = 0;
	docs->alloc = 0;
}

/* Append a document; takes the reference to value, even on failure. */
static int docs_append(struct render_docs *out, json_t *value, unsigned line,
		       unsigned col)
{
	if (out->len == out->alloc) {
		size_t alloc = out->alloc ? out->alloc * 2 : 8;
		struct render_doc *items;

		items = realloc(out->items, alloc * sizeof(*items));
		if (!items) {
			json_decref(value);
			return ERR_NOMEM;
		}
		out->items = items;
		out->alloc = alloc;
	}
	out->items[out->len].value = value;
	out->items[out->len].line = line;
	out->items[out->len].column = col;
	out->len++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Numbers, as Go prints them                                          */

/*
 * A float as encoding/json would send it: integral values that fit in
 * int64 become integers (Go prints float64(1000) as "1000"). Never NaN/Inf.
 */
static json_t *number_json(double f)
{
	if (f >= -9223372036854775808.0 && f < 9223372036854775808.0 &&
	    (double)(long long)f == f)
		return json_integer((json_int_t)(long long)f);
	return json_real(f);
}

/*
 * strconv.FormatFloat(f, 'g', -1, 32), with Go's +Inf/-Inf/NaN replaced by
 * .inf/-.inf/.nan: how sigs.k8s.io/yaml turns a float map key into a JSON
 * object key (yes, with float32 precision). `out` has room for 32 bytes.
 */
static void format_float_key(double d, char *out, size_t size)
{
	/* float32(d) rounds to +Inf from FLT_MAX + half an ulp on. */
	const double inf_from = (double)FLT_MAX + 0x1p103;
	char tmp[32], digits[16], res[48];
	int prec, exp10, nd = 0, dp;
	size_t k = 0;
	const char *p;
	float f;

	if (isnan(d)) {
		snprintf(out, size, ".nan");
		return;
	}
	if (d >= inf_from || d <= -inf_from) {
		snprintf(out, size, d > 0 ? ".inf" : "-.inf");
		return;
	}
	if (d > FLT_MAX)
		f = FLT_MAX;
	else if (d < -FLT_MAX)
		f = -FLT_MAX;
	else
		f = (float)d;
	if (f == 0) {
		snprintf(out, size, signbit(f) ? "-0" : "0");
		return;
	}
	/* The shortest digits that read back as the same float32. */
	for (prec = 0; prec < 9; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec, (double)f);
		if (strtof(tmp, NULL) == f)
			break;
	}
	p = tmp;
	if (*p == '-') {
		res[k++] = '-';
		p++;
	}
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9' && nd < (int)sizeof(digits))
			digits[nd++] = *p;
	exp10 = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	dp = exp10 + 1; /* value = 0.<digits> * 10^dp */

	/* Go's shortest 'g': %e when the exponent is < -4 or >= 6. */
	if (exp10 < -4 || exp10 >= 6) {
		res[k++] = digits[0];
		if (nd > 1) {
			res[k++] = '.';
			for (int i = 1; i < nd; i++)
				res[k++] = digits[i];
		}
		snprintf(res + k, sizeof(res) - k, "e%c%02d",
			 exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
	} else {
		if (dp <= 0) {
			res[k++] = '0';
			res[k++] = '.';
			for (int i = 0; i < -dp; i++)
				res[k++] = '0';
			for (int i = 0; i < nd; i++)
				res[k++] = digits[i];
		} else {
			for (int i = 0; i < dp; i++)
				res[k++] = i < nd ? digits[i] : '0';
			if (nd > dp) {
				res[k++] = '.';
				for (int i = dp; i < nd; i++)
					res[k++] = digits[i];
			}
		}
		res[k] = '\0';
	}
	snprintf(out, size, "%s", res);
}

/* ------------------------------------------------------------------ */
/* base64, UTF-8                                                       */

static bool utf8_valid(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp;

	for (size_t i = 0; i < n;) {
		size_t w = s[i] < 0x80 ? 1 : diff_utf8_decode(s + i, n - i, &cp);

		if (s[i] >= 0x80 && w == 1)
			return false;
		i += w;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Scalar resolution (go-yaml v2 resolve.go)                           */
/* (the plain-scalar rules: diff_yaml_resolve(), diff/yamlscalar.c)    */

enum tag_kind {
	TAG_NONE, /* no tag */
	TAG_STR,
	TAG_INT,
	TAG_FLOAT,
	TAG_BOOL,
	TAG_NULL,
	TAG_TIMESTAMP,
	TAG_BINARY,
	TAG_MERGE,
	TAG_MAP,
	TAG_SET,
	TAG_SEQ,
	TAG_OMAP,
	TAG_PAIRS,
	TAG_STD_OTHER, /* another tag:yaml.org,2002: tag */
	TAG_LOCAL,     /* "!", "!foo", any other URI */
};

static enum tag_kind tag_classify(const char *tag)
{
	static const struct {
		const char *name;
		enum tag_kind kind;
	} std[] = {
		{"str", TAG_STR},	{"int", TAG_INT},
		{"float", TAG_FLOAT},	{"bool", TAG_BOOL},
		{"null", TAG_NULL},	{"timestamp", TAG_TIMESTAMP},
		{"binary", TAG_BINARY}, {"merge", TAG_MERGE},
		{"map", TAG_MAP},	{"set", TAG_SET},
		{"seq", TAG_SEQ},	{"omap", TAG_OMAP},
		{"pairs", TAG_PAIRS},
	};
	size_t plen = sizeof(STD_TAG_PREFIX) - 1;

	if (!tag)
		return TAG_NONE;
	if (strncmp(tag, STD_TAG_PREFIX, plen))
		return TAG_LOCAL;
	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++)
		if (!strcmp(tag + plen, std[i].name))
			return std[i].kind;
	return TAG_STD_OTHER;
}

/* The tag as go-yaml prints it: !!int for tag:yaml.org,2002:int. */
static void short_tag(const char *tag, char *out, size_t size)
{
	size_t plen = sizeof(STD_TAG_PREFIX) - 1;

	if (!strncmp(tag, STD_TAG_PREFIX, plen))
		snprintf(out, size, "!!%.40s", tag + plen);
	else
		snprintf(out, size, "%.40s", tag);
}

static const char *rkind_tag(enum diff_yaml_kind k)
{
	switch (k) {
	case DIFF_YAML_NULL:
		return "!!null";
	case DIFF_YAML_BOOL:
		return "!!bool";
	case DIFF_YAML_INT:
	case DIFF_YAML_UINT:
		return "!!int";
	case DIFF_YAML_FLOAT:
		return "!!float";
	case DIFF_YAML_TIMESTAMP:
		return "!!timestamp";
	case DIFF_YAML_STR:
		break;
	}
	return "!!str";
}

/* ------------------------------------------------------------------ */
/* The YAML event decoder                                              */

struct anchor {
	char *name;
	json_t *value; /* NULL while the anchored node is being built */
	size_t nodes;  /* nodes a copy produces */
	unsigned height;
};

/* Position and text of one key of a mapping being built. */
struct key_entry {
	size_t off, len; /* in key_text */
	unsigned line, col;
};

enum frame_kind { FRAME_DOC, FRAME_SEQ, FRAME_MAP };

struct frame {
	enum frame_kind kind;
	json_t *value;	 /* array or object; the root for FRAME_DOC */
	json_t *merged;	 /* keys from <<, applied at the end; or NULL */
	size_t anchor;	 /* 1 + index in anchors, 0: none */
	size_t nodes;	 /* nodes in this subtree */
	unsigned height; /* 1 + height of the highest child */
	unsigned line, col;
	size_t keys_base; /* nkeys when this mapping started */
	size_t text_base; /* key_text.len when this mapping started */
	bool have_key;	  /* a key was read; its value comes next */
	bool merge;	  /* ... and that key is << */
};

struct yparse {
	const char *name;
	struct err *err;
	struct render_docs *out;

	struct frame *frames;
	size_t nframes, frames_alloc;

	struct anchor *anchors;
	size_t nanchors, anchors_alloc;
	json_t *anchor_index; /* name -> json integer index into anchors */

	struct key_entry *keys;
	size_t nkeys, keys_alloc;
	struct buf key_text;

	struct buf scratch; /* number text without underscores */
	struct buf binary;  /* decoded !!binary */
	size_t alias_nodes; /* nodes produced by aliases so far */
};

static int fail_mark(struct yparse *st, int code, const yaml_mark_t *m,
		     const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail_mark(struct yparse *st, int code, const yaml_mark_t *m,
		     const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	if (buf_vaddf(&msg, fmt, ap) < 0)
		buf_reset(&msg);
	va_end(ap);
	fail_at(st->err, code, st->name, (unsigned)m->line + 1,
		(unsigned)m->column + 1, "%s",
		msg.len ? msg.ptr : "out of memory while reporting an error");
	buf_release(&msg);
	return code;
}

static int fail_nomem(struct yparse *st, const yaml_mark_t *m)
{
	return fail_mark(st, ERR_NOMEM, m, "out of memory");
}

static void anchors_reset(struct yparse *st)
{
	for (size_t i = 0; i < st->nanchors; i++) {
		free(st->anchors[i].name);
		json_decref(st->anchors[i].value);
	}
	st->nanchors = 0;
	if (st->anchor_index)
		json_object_clear(st->anchor_index);
}

/*
 * Start an anchor `name` (value NULL: being built) or define it at once.
 * The newest definition of a name wins. *idx is its index.
 */
static int anchor_add(struct yparse *st, const char *name, json_t *value,
		      size_t *idx)
{
	struct anchor *a;

	if (st->nanchors == st->anchors_alloc) {
		size_t alloc = st->anchors_alloc ? st->anchors_alloc * 2 : 16;
		struct anchor *p = realloc(st->anchors, alloc * sizeof(*p));

		if (!p)
			return ERR_NOMEM;
		st->anchors = p;
		st->anchors_alloc = alloc;
	}
	if (!st->anchor_index && !(st->anchor_index = json_object()))
		return ERR_NOMEM;
	a = &st->anchors[st->nanchors];
	if (!(a->name = strdup(name)))
		return ERR_NOMEM;
	if (json_object_set_new_nocheck(
		    st->anchor_index, name,
		    json_integer((json_int_t)st->nanchors)) < 0) {
		free(a->name);
		return ERR_NOMEM;
	}
	a->value = json_incref(value);
	a->nodes = 1;
	a->height = 0;
	*idx = st->nanchors++;
	return 0;
}

static struct anchor *anchor_find(struct yparse *st, const char *name)
{
	json_t *idx;

	if (!st->anchor_index ||
	    !(idx = json_object_get(st->anchor_index, name)))
		return NULL;
	return &st->anchors[json_integer_value(idx)];
}

/* Push a frame; takes the reference to value, even on failure. */
static int frame_push(struct yparse *st, enum frame_kind kind, json_t *value,
		      const yaml_mark_t *m)
{
	struct frame *f;

	if (st->nframes == st->frames_alloc) {
		size_t alloc = st->frames_alloc ? st->frames_alloc * 2 : 16;
		struct frame *p = realloc(st->frames, alloc * sizeof(*p));

		if (!p) {
			json_decref(value);
			return ERR_NOMEM;
		}
		st->frames = p;
		st->frames_alloc = alloc;
	}
	f = &st->frames[st->nframes++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->value = value;
	f->nodes = 1;
	f->height = 1;
	f->line = (unsigned)m->line + 1;
	f->col = (unsigned)m->column + 1;
	f->keys_base = st->nkeys;
	f->text_base = st->key_text.len;
	return 0;
}

static struct frame *frame_top(struct yparse *st)
{
	return &st->frames[st->nframes - 1];
}

/* Collections open around the next node. */
static unsigned open_depth(const struct yparse *st)
{
	return (unsigned)(st->nframes - 1);
}

/*
 * Read a key of the mapping on top: a duplicate (after stringification)
 * is an error naming both lines.
 */
static int key_add(struct yparse *st, const char *key, size_t len,
		   const yaml_mark_t *m)
{
	struct frame *f = frame_top(st);
	struct key_entry *e;
	char ex[EXCERPT_MAX + 4];

	if (memchr(key, '\0', len))
		return fail_mark(st, ERR_PARSE, m,
				 "key contains a NUL character, which syncd "
				 "does not support");
	if (json_object_getn(f->value, key, len)) {
		unsigned first = 0;

		for (size_t i = f->keys_base; i < st->nkeys; i++) {
			e = &st->keys[i];
			if (e->len == len &&
			    !memcmp(st->key_text.ptr + e->off, key, len)) {
				first = e->line;
				break;
			}
		}
		return fail_mark(st, ERR_PARSE, m,
				 "duplicate key \"%s\" (first at line %u)",
				 excerpt(ex, sizeof(ex), key, len), first);
	}
	if (st->nkeys == st->keys_alloc) {
		size_t alloc = st->keys_alloc ? st->keys_alloc * 2 : 64;
		struct key_entry *p = realloc(st->keys, alloc * sizeof(*p));

		if (!p)
			return fail_nomem(st, m);
		st->keys = p;
		st->keys_alloc = alloc;
	}
	e = &st->keys[st->nkeys];
	e->off = st->key_text.len;
	e->len = len;
	e->line = (unsigned)m->line + 1;
	e->col = (unsigned)m->column + 1;
	if (buf_add(&st->key_text, key, len) < 0)
		return fail_nomem(st, m);
	st->nkeys++;
	f->have_key = true;
	f->merge = false;
	return 0;
}

/* Copy the keys of `src` that `merged` does not have yet (earlier wins). */
static int merge_one(struct frame *f, json_t *src)
{
	const char *k;
	json_t *v;

	if (!f->merged && !(f->merged = json_object()))
		return ERR_NOMEM;
	json_object_foreach(src, k, v)
	{
		if (json_object_get(f->merged, k))
			continue;
		if (json_object_set_nocheck(f->merged, k, v) < 0)
			return ERR_NOMEM;
	}
	return 0;
}

/*
 * The value of a << key: a mapping, an alias to a mapping, or a sequence
 * (not an alias to one, as go-yaml v2 checks) of those, aliases already
 * expanded. Takes the reference to v.
 */
static int merge_value(struct yparse *st, struct frame *f, json_t *v,
		       bool alias, const yaml_mark_t *m)
{
	int error = 0;
	size_t i;
	json_t *el;

	if (json_is_object(v)) {
		if (merge_one(f, v) < 0)
			error = fail_nomem(st, m);
		goto out;
	}
	if (json_is_array(v) && !alias) {
		json_array_foreach(v, i, el)
		{
			if (!json_is_object(el))
				goto bad;
		}
		json_array_foreach(v, i, el)
		{
			if (merge_one(f, el) < 0) {
				error = fail_nomem(st, m);
				goto out;
			}
		}
		goto out;
	}
bad:
	error = fail_mark(st, ERR_PARSE, m,
			  "map merge requires a mapping or a sequence of "
			  "mappings as the value of <<");
out:
	json_decref(v);
	return error;
}

/*
 * Attach a finished node to the frame on top. Takes the reference to v,
 * even on failure. `nodes` and `height` describe the node's subtree;
 * `alias` says it is the copy an alias made.
 */
static int node_add(struct yparse *st, json_t *v, size_t nodes, unsigned height,
		    bool alias, const yaml_mark_t *m)
{
	struct frame *f = frame_top(st);
	int error = 0;

	switch (f->kind) {
	case FRAME_DOC:
		json_decref(f->value); /* libyaml gives one root; be safe */
		f->value = v;
		f->line = (unsigned)m->line + 1;
		f->col = (unsigned)m->column + 1;
		break;
	case FRAME_SEQ:
		if (json_array_append_new(f->value, v) < 0)
			return fail_nomem(st, m);
		break;
	case FRAME_MAP:
		if (f->merge) {
			if ((error = merge_value(st, f, v, alias, m)) < 0)
				return error;
		} else {
			struct key_entry *e = &st->keys[st->nkeys - 1];

			if (json_object_setn_new_nocheck(
				    f->value, st->key_text.ptr + e->off, e->len,
				    v) < 0)
				return fail_nomem(st, m);
		}
		f->have_key = false;
		f->merge = false;
		break;
	}
	f->nodes += nodes;
	if (height + 1 > f->height)
		f->height = height + 1;
	return 0;
}

/*
 * Decode the text of a scalar event into r (string kinds keep the text in
 * *text and *len, which may point into st->binary), as go-yaml v2's
 * decoder.scalar() does.
 */
static int scalar_resolve(struct yparse *st, const yaml_event_t *ev,
			  struct diff_yaml_scalar *r, const char **text,
			  size_t *len)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	const yaml_mark_t *m = &ev->start_mark;
	enum tag_kind tk = tag_classify(tag);
	enum diff_yaml_kind want;
	char ex[EXCERPT_MAX + 4], stag[48];
	int error, rc;

	*text = s;
	*len = n;
	r->kind = DIFF_YAML_STR;
	switch (tk) {
	case TAG_NONE:
		/* Quoted and block scalars are strings. */
		if (!ev->data.scalar.plain_implicit)
			return 0;
		return diff_yaml_resolve(r, s, n, DIFF_YAML_TRY_TIMESTAMP,
					 &st->scratch) < 0
			       ? fail_nomem(st, m)
			       : 0;
	case TAG_BINARY:
		buf_reset(&st->binary);
		/* base64.StdEncoding.DecodeString: "\r" and "\n" ignored */
		rc = base64_decode(&st->binary, s, n,
				   BASE64_SKIP_NEWLINES | BASE64_ANY_LAST_BITS);
		if (rc == ERR_NOMEM || rc == ERR_LIMIT)
			return fail_nomem(st, m);
		if (rc < 0)
			return fail_mark(st, ERR_PARSE, m,
					 "!!binary value contains invalid "
					 "base64 data");
		*text = buf_cstr(&st->binary);
		*len = st->binary.len;
		if (!utf8_valid(*text, *len))
			return fail_mark(st, ERR_PARSE, m,
					 "!!binary value is not valid UTF-8 "
					 "text, which a JSON string must be");
		return 0;
	case TAG_INT:
		want = DIFF_YAML_INT;
		break;
	case TAG_FLOAT:
		want = DIFF_YAML_FLOAT;
		break;
	case TAG_BOOL:
		want = DIFF_YAML_BOOL;
		break;
	case TAG_NULL:
		want = DIFF_YAML_NULL;
		break;
	case TAG_TIMESTAMP:
		want = DIFF_YAML_TIMESTAMP;
		break;
	default:
		/* !!str, and tags go-yaml cannot resolve: the text as is. */
		return 0;
	}
	if ((error = diff_yaml_resolve(
		     r, s, n, tk == TAG_TIMESTAMP ? DIFF_YAML_TRY_TIMESTAMP : 0,
		     &st->scratch)) < 0)
		return fail_nomem(st, m);
	if (r->kind == DIFF_YAML_UINT && want == DIFF_YAML_INT)
		return 0;
	if (r->kind == DIFF_YAML_INT && want == DIFF_YAML_FLOAT) {
		r->kind = DIFF_YAML_FLOAT;
		r->f = (double)r->i;
		return 0;
	}
	if (r->kind == want)
		return 0;
	short_tag(tag, stag, sizeof(stag));
	return fail_mark(st, ERR_PARSE, m, "cannot decode %s `%s` as a %s",
			 rkind_tag(r->kind), excerpt(ex, sizeof(ex), s, n),
			 stag);
}

/* A resolved scalar as a JSON value; .inf and .nan are errors. */
static int rval_json(struct yparse *st, const struct diff_yaml_scalar *r,
		     const char *s, size_t n, const char *orig, size_t orig_len,
		     const yaml_mark_t *m, json_t **out)
{
	char ex[EXCERPT_MAX + 4];
	json_t *v = NULL;

	switch (r->kind) {
	case DIFF_YAML_NULL:
		v = json_null();
		break;
	case DIFF_YAML_BOOL:
		v = json_boolean(r->b);
		break;
	case DIFF_YAML_INT:
		v = json_integer((json_int_t)r->i);
		break;
	case DIFF_YAML_UINT:
		v = json_real((double)r->u);
		break;
	case DIFF_YAML_FLOAT:
		if (isnan(r->f) || isinf(r->f))
			return fail_mark(
				st, ERR_PARSE, m,
				"%s cannot be represented in JSON "
				"(%s)",
				excerpt(ex, sizeof(ex), orig, orig_len),
				isnan(r->f) ? "not a number" : "infinity");
		v = number_json(r->f);
		break;
	case DIFF_YAML_STR:
	case DIFF_YAML_TIMESTAMP:
		if (memchr(s, '\0', n))
			return fail_mark(st, ERR_PARSE, m,
					 "string contains a NUL character, "
					 "which syncd does not support");
		v = json_stringn_nocheck(s, n);
		break;
	}
	if (!v)
		return fail_nomem(st, m);
	*out = v;
	return 0;
}

/* A resolved scalar as a JSON object key (sigs.k8s.io/yaml's rules). */
static void rval_key(const struct diff_yaml_scalar *r, const char *s, size_t n,
		     char *tmp, size_t size, const char **key, size_t *len)
{
	switch (r->kind) {
	case DIFF_YAML_STR:
	case DIFF_YAML_TIMESTAMP:
		*key = s;
		*len = n;
		return;
	case DIFF_YAML_NULL:
		snprintf(tmp, size, "null");
		break;
	case DIFF_YAML_BOOL:
		snprintf(tmp, size, "%s", r->b ? "true" : "false");
		break;
	case DIFF_YAML_INT:
		snprintf(tmp, size, "%" PRId64, r->i);
		break;
	case DIFF_YAML_UINT:
		snprintf(tmp, size, "%" PRIu64, r->u);
		break;
	case DIFF_YAML_FLOAT:
		format_float_key(r->f, tmp, size);
		break;
	}
	*key = tmp;
	*len = strlen(tmp);
}

static int on_scalar(struct yparse *st, const yaml_event_t *ev)
{
	struct frame *f = frame_top(st);
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	const char *anchor = (const char *)ev->data.scalar.anchor;
	const yaml_mark_t *m = &ev->start_mark;
	bool is_key = f->kind == FRAME_MAP && !f->have_key;
	const char *text, *key;
	size_t len, key_len, idx;
	char tmp[64];
	json_t *v = NULL;
	struct diff_yaml_scalar r;
	int error = 0;

	/* go-yaml's isMerge: "<<" plain and untagged (or "!"), or !!merge. */
	if (is_key && n == 2 && !memcmp(s, "<<", 2) &&
	    (ev->data.scalar.plain_implicit ||
	     tag_classify((const char *)ev->data.scalar.tag) == TAG_MERGE)) {
		if (anchor && (!(v = json_string("<<")) ||
			       anchor_add(st, anchor, v, &idx) < 0)) {
			error = fail_nomem(st, m);
			goto out;
		}
		f->have_key = true;
		f->merge = true;
		goto out;
	}
	if ((error = scalar_resolve(st, ev, &r, &text, &len)) < 0)
		goto out;
	if (anchor || !is_key) {
		if ((error = rval_json(st, &r, text, len, s, n, m, &v)) < 0)
			goto out;
		if (anchor && anchor_add(st, anchor, v, &idx) < 0) {
			error = fail_nomem(st, m);
			goto out;
		}
	}
	if (!is_key) {
		error = node_add(st, v, 1, 0, false, m);
		v = NULL; /* node_add took it */
		goto out;
	}
	if (r.kind == DIFF_YAML_NULL) {
		/* As sigs.k8s.io/yaml: "unsupported map key of type <nil>". */
		error = fail_mark(st, ERR_PARSE, m,
				  "a mapping key cannot be null");
		goto out;
	}
	rval_key(&r, text, len, tmp, sizeof(tmp), &key, &key_len);
	error = key_add(st, key, key_len, m);
out:
	json_decref(v);
	return error;
}

/* A key given by an alias: the anchored value, stringified. */
static int alias_key(struct yparse *st, const json_t *v, const yaml_mark_t *m)
{
	char tmp[64];

	switch (json_typeof(v)) {
	case JSON_STRING:
		return key_add(st, json_string_value(v), json_string_length(v),
			       m);
	case JSON_INTEGER:
		snprintf(tmp, sizeof(tmp), "%lld",
			 (long long)json_integer_value(v));
		break;
	case JSON_REAL:
		format_float_key(json_real_value(v), tmp, sizeof(tmp));
		break;
	case JSON_TRUE:
		snprintf(tmp, sizeof(tmp), "true");
		break;
	case JSON_FALSE:
		snprintf(tmp, sizeof(tmp), "false");
		break;
	case JSON_NULL:
		return fail_mark(st, ERR_PARSE, m,
				 "a mapping key cannot be null");
	default:
		return fail_mark(st, ERR_PARSE, m,
				 "a mapping key must be a scalar, not a %s",
				 json_is_object(v) ? "mapping" : "sequence");
	}
	return key_add(st, tmp, strlen(tmp), m);
}

static int on_alias(struct yparse *st, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	const yaml_mark_t *m = &ev->start_mark;
	struct frame *f = frame_top(st);
	struct anchor *a = anchor_find(st, name);
	json_t *copy;

	if (!a)
		return fail_mark(st, ERR_PARSE, m,
				 "unknown anchor '%s' referenced", name);
	if (!a->value)
		return fail_mark(st, ERR_PARSE, m,
				 "anchor '%s' value contains itself", name);
	if (a->nodes > RENDER_MAX_ALIAS_NODES - st->alias_nodes)
		return fail_mark(st, ERR_LIMIT, m,
				 "alias expansion exceeds %u nodes (a "
				 "'billion laughs' document?)",
				 RENDER_MAX_ALIAS_NODES);
	st->alias_nodes += a->nodes;
	if (f->kind == FRAME_MAP && !f->have_key)
		return alias_key(st, a->value, m);
	if (open_depth(st) + a->height > RENDER_MAX_DEPTH)
		return fail_mark(st, ERR_LIMIT, m,
				 "nesting deeper than %u levels",
				 RENDER_MAX_DEPTH);
	if (!(copy = json_deep_copy(a->value)))
		return fail_nomem(st, m);
	return node_add(st, copy, a->nodes, a->height, true, m);
}

static int on_collection_start(struct yparse *st, const yaml_event_t *ev)
{
	bool is_map = ev->type == YAML_MAPPING_START_EVENT;
	const char *tag = (const char *)(is_map ? ev->data.mapping_start.tag
						: ev->data.sequence_start.tag);
	const char *anchor =
		(const char *)(is_map ? ev->data.mapping_start.anchor
				      : ev->data.sequence_start.anchor);
	const yaml_mark_t *m = &ev->start_mark;
	struct frame *f = frame_top(st);
	enum tag_kind tk = tag_classify(tag);
	char stag[48];
	size_t idx;
	json_t *v;
	int error;

	if (f->kind == FRAME_MAP && !f->have_key)
		return fail_mark(st, ERR_PARSE, m,
				 "a mapping key must be a scalar, not a %s",
				 is_map ? "mapping" : "sequence");
	if (open_depth(st) + 1 > RENDER_MAX_DEPTH)
		return fail_mark(st, ERR_LIMIT, m,
				 "nesting deeper than %u levels",
				 RENDER_MAX_DEPTH);
	if (tk != TAG_NONE && tk != TAG_LOCAL &&
	    (is_map ? tk != TAG_MAP && tk != TAG_SET
		    : tk != TAG_SEQ && tk != TAG_OMAP && tk != TAG_PAIRS)) {
		short_tag(tag, stag, sizeof(stag));
		return fail_mark(st, ERR_PARSE, m, "cannot decode %s as a %s",
				 is_map ? "!!map" : "!!seq", stag);
	}
	if (!(v = is_map ? json_object() : json_array()))
		return fail_nomem(st, m);
	if ((error = frame_push(st, is_map ? FRAME_MAP : FRAME_SEQ, v, m)) < 0)
		return fail_nomem(st, m);
	if (anchor) {
		if (anchor_add(st, anchor, NULL, &idx) < 0)
			return fail_nomem(st, m);
		frame_top(st)->anchor = idx + 1;
	}
	return 0;
}

static int on_collection_end(struct yparse *st, const yaml_event_t *ev)
{
	struct frame f = *frame_top(st);
	yaml_mark_t start = ev->start_mark;
	const char *k;
	json_t *v;
	int error = 0;

	st->nframes--;
	start.line = f.line - 1;
	start.column = f.col - 1;
	if (f.kind == FRAME_MAP) {
		st->nkeys = f.keys_base;
		buf_truncate(&st->key_text, f.text_base);
		/* Keys from << only where no explicit key is. */
		if (f.merged) {
			json_object_foreach(f.merged, k, v)
			{
				if (json_object_get(f.value, k))
					continue;
				if (json_object_set_nocheck(f.value, k, v) <
				    0) {
					error = fail_nomem(st, &start);
					goto out;
				}
			}
		}
	}
	if (f.anchor) {
		struct anchor *a = &st->anchors[f.anchor - 1];

		a->value = json_incref(f.value);
		a->nodes = f.nodes;
		a->height = f.height;
	}
	error = node_add(st, f.value, f.nodes, f.height, false, &start);
	f.value = NULL; /* node_add took it */
out:
	json_decref(f.merged);
	json_decref(f.value);
	return error;
}

static int on_document_end(struct yparse *st)
{
	struct frame f = *frame_top(st);
	int error = 0;

	st->nframes--;
	anchors_reset(st);
	if (!f.value || json_is_null(f.value)) {
		json_decref(f.value);
		return 0;
	}
	if ((error = docs_append(st->out, f.value, f.line, f.col)) < 0)
		err_set(st->err, error, "%s: out of memory", st->name);
	return error;
}

static int on_event(struct yparse *st, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (frame_push(st, FRAME_DOC, NULL, &ev->start_mark) < 0)
			return fail_nomem(st, &ev->start_mark);
		return 0;
	case YAML_DOCUMENT_END_EVENT:
		return on_document_end(st);
	case YAML_SCALAR_EVENT:
		return on_scalar(st, ev);
	case YAML_ALIAS_EVENT:
		return on_alias(st, ev);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		return on_collection_start(st, ev);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return on_collection_end(st, ev);
	default:
		return 0;
	}
}

/* libyaml's error, as "<name>:<line>:<col>: <problem> (<context>)". */
static int libyaml_error(struct yparse *st, const yaml_parser_t *p,
			 const char *data, size_t len)
{
	const char *problem = p->problem ? p->problem : "unknown error";
	unsigned line, col;

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return err_set(st->err, ERR_NOMEM, "%s: out of memory",
			       st->name);
	case YAML_READER_ERROR:
		/* The reader reports a byte offset, not a mark. */
		offset_position(data, len, p->problem_offset, &line, &col);
		if (p->problem_value == -1)
			return fail_at(st->err, ERR_PARSE, st->name, line, col,
				       "%s", problem);
		if (!strncmp(problem, "control characters", 18))
			return fail_at(st->err, ERR_PARSE, st->name, line, col,
				       "%s (U+%04X%s)", problem,
				       (unsigned)p->problem_value,
				       p->problem_value ? "" : ", a NUL byte");
		return fail_at(st->err, ERR_PARSE, st->name, line, col,
			       "%s (byte 0x%02X)", problem,
			       (unsigned)p->problem_value);
	default:
		line = (unsigned)p->problem_mark.line + 1;
		col = (unsigned)p->problem_mark.column + 1;
		if (!p->context)
			return fail_at(st->err, ERR_PARSE, st->name, line, col,
				       "%s", problem);
		if (p->context_mark.line == p->problem_mark.line &&
		    p->context_mark.column == p->problem_mark.column)
			return fail_at(st->err, ERR_PARSE, st->name, line, col,
				       "%s (%s)", problem, p->context);
		return fail_at(st->err, ERR_PARSE, st->name, line, col,
			       "%s (%s started at %u:%u)", problem, p->context,
			       (unsigned)p->context_mark.line + 1,
			       (unsigned)p->context_mark.column + 1);
	}
}

static int parse_yaml(struct render_docs *out, const char *data, size_t len,
		      const char *name, struct err *err)
{
	struct yparse st;
	yaml_parser_t parser;
	yaml_event_t ev;
	bool parser_ok = false, done = false;
	int error = 0;

	memset(&st, 0, sizeof(st));
	st.name = name;
	st.err = err;
	st.out = out;
	buf_init(&st.key_text, 0);
	buf_init(&st.scratch, 0);
	buf_init(&st.binary, 0);

	if (!yaml_parser_initialize(&parser)) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory", name);
		goto out;
	}
	parser_ok = true;
	yaml_parser_set_input_string(
		&parser, (const unsigned char *)(data ? data : ""), len);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			error = libyaml_error(&st, &parser, data, len);
			goto out;
		}
		error = on_event(&st, &ev);
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
		if (error < 0)
			goto out;
	}

out:
	for (size_t i = 0; i < st.nframes; i++) {
		json_decref(st.frames[i].value);
		json_decref(st.frames[i].merged);
	}
	free(st.frames);
	anchors_reset(&st);
	free(st.anchors);
	json_decref(st.anchor_index);
	free(st.keys);
	buf_release(&st.key_text);
	buf_release(&st.scratch);
	buf_release(&st.binary);
	if (parser_ok)
		yaml_parser_delete(&parser);
	return error;
}

/* ------------------------------------------------------------------ */
/* JSON                                                                */

static bool is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * Integral reals to integers (as for YAML) and the depth cap, over a tree
 * jansson already bounded to JSON_PARSER_MAX_DEPTH levels.
 */
static int json_normalize(json_t *v, unsigned depth)
{
	int error;

	if (json_is_object(v) || json_is_array(v)) {
		if (depth > RENDER_MAX_DEPTH)
			return ERR_LIMIT;
	}
	if (json_is_object(v)) {
		void *it;

		for (it = json_object_iter(v); it;
		     it = json_object_iter_next(v, it)) {
			json_t *c = json_object_iter_value(it);

			if (json_is_real(c)) {
				json_t *n = number_json(json_real_value(c));

				if (!n ||
				    json_object_iter_set_new(v, it, n) < 0)
					return ERR_NOMEM;
			} else if ((error = json_normalize(c, depth + 1)) < 0) {
				return error;
			}
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			json_t *c = json_array_get(v, i);

			if (json_is_real(c)) {
				json_t *n = number_json(json_real_value(c));

				if (!n || json_array_set_new(v, i, n) < 0)
					return ERR_NOMEM;
			} else if ((error = json_normalize(c, depth + 1)) < 0) {
				return error;
			}
		}
	}
	return 0;
}

/*
 * One or more JSON values separated by whitespace, as kubectl's
 * YAMLOrJSONDecoder reads them.
 */
static int parse_json(struct render_docs *out, const char *data, size_t len,
		      const char *name, struct err *err)
{
	const size_t flags = JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES |
			     JSON_DECODE_ANY;
	size_t pos = 0, cur_off = 0;
	unsigned cur_line = 1, cur_col = 1, line, col;
	json_error_t jerr;
	json_t *v;
	int error = 0;

	for (;;) {
		while (pos < len && is_json_space(data[pos]))
			pos++;
		if (pos == len)
			break;
		if (!(v = json_loadb(data + pos, len - pos, flags, &jerr))) {
			enum json_error_code code = json_error_code(&jerr);
			size_t at =
				pos +
				(size_t)(jerr.position > 0 ? jerr.position : 0);

			/*
			 * jansson's position is just past the token it
			 * complains about; for a bad UTF-8 byte it is the
			 * offset of that byte.
			 */
			if (code != json_error_invalid_utf8 && at > pos)
				at--;

			offset_position(data, len, at, &line, &col);
			if (code == json_error_null_character)
				error = fail_at(err, ERR_PARSE, name, line, col,
						"string contains a NUL "
						"character (\\u0000), which "
						"syncd does not support");
			else if (code == json_error_stack_overflow)
				error = fail_at(err, ERR_LIMIT, name, line, col,
						"nesting deeper than %u levels",
						RENDER_MAX_DEPTH);
			else if (code == json_error_numeric_overflow &&
				 strstr(jerr.text, "integer"))
				error = fail_at(err, ERR_PARSE, name, line, col,
						"%s (integers must fit in 64 "
						"bits; quote the value)",
						jerr.text);
			else
				error = fail_at(err, ERR_PARSE, name, line, col,
						"%s", jerr.text);
			goto out;
		}
		/* Positions grow, so count lines from the last value on. */
		offset_position(data + cur_off, len - cur_off, pos - cur_off,
				&line, &col);
		if (line == 1)
			col += cur_col - 1;
		line += cur_line - 1;
		cur_off = pos;
		cur_line = line;
		cur_col = col;
		if (json_is_real(v)) {
			json_t *n = number_json(json_real_value(v));

			json_decref(v);
			if (!(v = n)) {
				error = fail_at(err, ERR_NOMEM, name, line, col,
						"out of memory");
				goto out;
			}
		}
		if ((error = json_normalize(v, 1)) < 0) {
			json_decref(v);
			if (error == ERR_LIMIT)
				fail_at(err, error, name, line, col,
					"nesting deeper than %u levels",
					RENDER_MAX_DEPTH);
			else
				fail_at(err, error, name, line, col,
					"out of memory");
			goto out;
		}
		if (jerr.position <= 0) {
			/* jansson always consumes a value; never loop. */
			json_decref(v);
			error = fail_at(err, ERR_PARSE, name, line, col,
					"cannot read JSON value");
			goto out;
		}
		pos += (size_t)jerr.position;
		if (json_is_null(v)) {
			json_decref(v);
			continue;
		}
		if ((error = docs_append(out, v, line, col)) < 0) {
			fail_at(err, error, name, line, col, "out of memory");
			goto out;
		}
	}
out:
	return error;
}

/* ------------------------------------------------------------------ */

int render_parse(struct render_docs *out, const char *data, size_t len,
		 const char *name, struct err *err)
{
	size_t i;

	if (!name)
		name = "<input>";
	if (len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3)) {
		data += 3;
		len -= 3;
	}
	/* kubectl's YAMLOrJSONDecoder: JSON when it starts like JSON. */
	for (i = 0; i < len && strchr(" \t\n\r\v\f", data[i]) && data[i]; i++)
		;
	if (i < len && (data[i] == '{' || data[i] == '['))
		return parse_json(out, data, len, name, err);
	return parse_yaml(out, data, len, name, err);
}
