/*
 * Confirming local drift with the server (`verify: dryRun`): the local
 * comparison costs no request per object, but it knows the server only
 * through diff_stored_object()'s model. An object it finds Drifted is
 * asked of the server once, with a dry run of the very apply a sync would
 * send; the answer is what the server would store, and if that equals the
 * live object nothing would change: the object is in sync. A verdict is
 * kept by (uid, resourceVersion, digest of the desired object and the
 * apply options), so the next pass asks nothing until one of them
 * changes. A dry run the server refuses (validation, an immutable field,
 * a webhook's denial, a conflict) is kept too and reported on the object
 * with the server's message, never taken for in sync.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/internal.h"
#include "util/sha256.h"

#include "util/banned.h" /* last */

const char *const app_verify_names[] = {"dryRun", "off", NULL};

int app_verify_parse(const char *name, enum app_verify *out, struct err *err)
{
	for (int i = 0; app_verify_names[i]; i++)
		if (!strcmp(name, app_verify_names[i])) {
			*out = (enum app_verify)i;
			return 0;
		}
	return err_set(err, ERR_USAGE, "verify mode \"%s\": want dryRun or off",
		       name);
}

/* The memo's key of one object: uid, resourceVersion and the digest. */
static int memo_key(const struct diff_object_report *r, const json_t *desired,
		    const json_t *live, const struct diff_options *opts,
		    struct buf *key)
{
	const json_t *meta = json_object_get(live, "metadata");
	const char *uid = json_string_value(json_object_get(meta, "uid"));
	const char *rv =
		json_string_value(json_object_get(meta, "resourceVersion"));
	uint8_t sum[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];
	struct sha256_ctx ctx;
	char *text;

	if (!uid || !rv)
		return ERR_NOTFOUND;
	if (!(text = json_dumps(desired, JSON_SORT_KEYS | JSON_COMPACT)))
		return ERR_NOMEM;
	sha256_init(&ctx);
	sha256_update(&ctx, text, strlen(text));
	/* What else decides the apply: the policy and force. */
	sha256_update(&ctx, &opts->policy, sizeof(opts->policy));
	sha256_update(&ctx, &r->force, sizeof(r->force));
	if (opts->field_manager)
		sha256_update(&ctx, opts->field_manager,
			      strlen(opts->field_manager));
	sha256_final(&ctx, sum);
	free(text);
	hex_encode(sum, sizeof(sum), hex);
	buf_reset(key);
	return buf_addf(key, "%s/%s/%s", uid, rv, hex);
}

/* Append the warning in w (taken) to report r. */
static int add_warning(struct diff_object_report *r, struct buf *w)
{
	char **ws;

	if (!(ws = realloc(r->warnings, (r->nwarnings + 1) * sizeof(*ws)))) {
		buf_release(w);
		return ERR_NOMEM;
	}
	r->warnings = ws;
	r->warnings[r->nwarnings++] = buf_detach(w, NULL);
	return 0;
}

static int refused(struct diff_object_report *r, const char *msg)
{
	struct buf w = BUF_INIT;

	if (buf_addf(&w, "the server refuses the apply (dry run): %s", msg) < 0)
		return ERR_NOMEM;
	return add_warning(r, &w);
}

/*
 * Replace report *r by the comparison of what the server would store
 * (`dry`) with live, when that finds it in sync. 1 when replaced.
 */
static int settle(struct diff_object_report *r, const json_t *dry,
		  const json_t *live, const struct diff_schemas *reg,
		  const struct diff_options *opts, struct err *err)
{
	struct diff_object_report exact;
	struct buf w = BUF_INIT;
	int error;

	if ((error = diff_compare_object(&exact, dry, live, reg, opts, err)) <
	    0)
		return error;
	if (exact.state != DIFF_IN_SYNC) {
		/* The local report stands: it names what was declared. */
		diff_object_report_release(&exact);
		return 0;
	}
	/*
	 * What the local comparison saw is how the server stores the
	 * declaration (a mutating webhook, a default it does not know):
	 * not drift, since no write changes it, but worth knowing.
	 */
	buf_adds(&w, "the server stores these declared fields otherwise "
		     "(admission or defaulting; a write would not change "
		     "them):");
	for (size_t i = 0; i < r->nfields; i++)
		buf_addf(&w, "%s %s", i ? "," : "", r->fields[i].path);
	diff_object_report_release(r);
	*r = exact;
	/* In sync: nothing to send (the dry-run object is no apply body). */
	json_decref(r->apply);
	r->apply = NULL;
	r->force = false;
	if (w.len && add_warning(r, &w) < 0)
		return ERR_NOMEM;
	return 1;
}

int app_verify(struct app *app, struct diff_report *report,
	       const struct diff_objset *desired,
	       const struct diff_schemas *reg, const struct diff_options *opts,
	       json_t **memo, struct app_verify_stats *st, struct err *err)
{
	struct kube_apply_options ao = {app->field_manager, false, true};
	json_t *next = json_object(), *none = NULL;
	struct buf key = BUF_INIT, name = BUF_INIT;
	struct app_verify_stats unused;
	/*
	 * Without a memo nothing is remembered, not even during this call:
	 * a one-shot sync of 10,000 drifted objects would otherwise hold
	 * every dry-run object until the end (80 MB at that size).
	 */
	bool keep = memo != NULL;
	int error = 0, r;

	if (!memo)
		memo = &none;
	if (!st)
		st = &unused;
	memset(st, 0, sizeof(*st));
	if (!next)
		return err_set(err, ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < report->len && error >= 0; i++) {
		struct diff_object_report *o = &report->objects[i];
		const struct diff_object *d, *l;
		const struct kube_resource *kr;
		struct err e = ERR_INIT;
		json_t *entry = NULL, *owned = NULL, *dry = NULL;
		bool keyed;

		/* Drift a sync would write; others' fields are not asked. */
		if (o->state != DIFF_DRIFTED || !o->apply ||
		    !(d = diff_objset_get(desired, &o->key)) ||
		    !(l = diff_objset_get(&app->live, &o->key)))
			continue;
		st->candidates++;
		if (!keep)
			r = ERR_NOTFOUND;
		else if ((r = memo_key(o, d->json, l->json, opts, &key)) ==
			 ERR_NOMEM) {
			error = err_set(err, r, "out of memory");
			break;
		}
		keyed = r == 0;
		if (keyed && *memo)
			entry = json_object_get(*memo, buf_cstr(&key));
		if (entry) {
			st->remembered++;
		} else {
			if (!(kr = app_resource_of(app, &o->key)))
				continue; /* not served: the local verdict */
			ao.force = o->force;
			st->dry_runs++;
			r = kube_apply(app->client, kr, o->apply, &ao, &dry,
				       &e);
			if (r == ERR_INVALID || r == ERR_EXISTS) {
				owned = json_pack("{s:s}", "refused",
						  err_first(&e));
				json_decref(dry);
			} else if (r == 0) {
				owned = json_pack("{s:o}", "dry", dry);
			} else {
				/* Unreachable or unserved: ask again later. */
				buf_reset(&name);
				diff_key_format(&o->key, &name);
				err_set(err, r, "%s: dry-run apply: %s",
					buf_cstr(&name), err_first(&e));
				json_decref(dry);
				err_release(&e);
				continue;
			}
			err_release(&e);
			if (!(entry = owned)) {
				error = err_set(err, ERR_NOMEM,
						"out of memory");
				break;
			}
		}
		if (keyed && json_object_set(next, buf_cstr(&key), entry) < 0)
			r = ERR_NOMEM;
		else if (json_object_get(entry, "refused")) {
			st->refused++;
			st->sent_refused += owned != NULL;
			r = refused(o, json_string_value(json_object_get(
					       entry, "refused")));
		} else if ((r = settle(o, json_object_get(entry, "dry"),
				       l->json, reg, opts, err)) > 0) {
			st->cleared++;
			st->sent_cleared += owned != NULL;
		}
		json_decref(owned);
		if (r == ERR_NOMEM)
			error = err_set(err, r, "out of memory");
		else if (r < 0)
			error = r;
	}
	/* Only what this pass met is kept: the memo never outgrows the app. */
	json_decref(*memo);
	*memo = next;
	json_decref(none);
	buf_release(&key);
	buf_release(&name);
	return error;
}
