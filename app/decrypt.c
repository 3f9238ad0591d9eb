/*
 * SOPS decryption of rendered objects (docs/sops.md): the sops program
 * itself decrypts each object that carries a top-level `sops` key, so
 * the key formats and the MAC are SOPS's own, not a copy of them.
 *
 * The object goes to sops as JSON on stdin, in the order the renderer
 * read it (SOPS's MAC covers the values in document order, so jansson's
 * insertion order must be kept: no key sorting). The age identities are
 * a file the user named, or a memfd sops reads as /proc/self/fd/N: never
 * a file on disk, never argv; the rest of sops's environment is empty
 * (no HOME: no key is picked up from anywhere else). What sops prints on
 * stdout is plaintext: parsed, then wiped; what it prints on stderr is
 * reduced to one reason, never quoted whole.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "app/app.h"
#include "util/file.h"
#include "util/proc.h"

#include "util/banned.h" /* last */

/* One object, encrypted or decrypted (Kubernetes stores at most ~1.5 MB). */
#define DECRYPT_MAX_OUTPUT (8u << 20)
#define DECRYPT_MAX_STDERR (16u << 10)
/* One sops run, unless the render timeout says otherwise. */
#define DECRYPT_TIMEOUT_MS 30000
/* "SOPS_AGE_KEY_FILE=" and a path. */
#define DECRYPT_ENV_MAX 4200

bool app_decrypt_needed(const struct diff_objset *set)
{
	for (size_t i = 0; i < set->len; i++)
		if (json_object_get(set->items[i]->json, "sops"))
			return true;
	return false;
}

/*
 * sops's reason in a few words, from its stderr (one line, no values:
 * what it prints names keys and recipients, but a MAC mismatch quotes
 * digests, which are cut).
 */
static void reason(const struct buf *errout, const struct proc_result *res,
		   struct buf *out)
{
	const char *e = buf_cstr(errout);
	const char *p;
	size_t n;

	if (strstr(e, "did not match any of the recipients") ||
	    strstr(e, "no identity matched"))
		buf_adds(out, "no matching age identity");
	else if (strstr(e, "failed to load age identities") ||
		 strstr(e, "Failed to get the data key"))
		buf_adds(out, "no age identity could be loaded (check the "
			      "key file or Secret)");
	else if (strstr(e, "MAC mismatch"))
		buf_adds(out, "MAC mismatch (the object was changed after it "
			      "was encrypted)");
	else if (strstr(e, "Could not decrypt value"))
		buf_adds(out, "a value cannot be decrypted (changed after it "
			      "was encrypted)");
	if (out->len)
		return;
	/* Anything else: its first line that says something, cut short. */
	for (p = e; *p == '\n' || *p == ' ' || *p == '\r'; p++)
		;
	n = strcspn(p, "\r\n");
	if (n > 160)
		n = 160;
	if (n) {
		buf_add(out, p, n);
		for (size_t i = 0; i < out->len; i++)
			if ((unsigned char)out->ptr[i] < 0x20)
				out->ptr[i] = ' ';
		return;
	}
	{
		char how[64];

		proc_result_describe(res, how, sizeof(how));
		buf_adds(out, how);
	}
}

/* The object for messages: "ORIGIN: Kind ns/name". */
static void name_of(const struct diff_object *obj, struct buf *out)
{
	buf_reset(out);
	if (obj->origin)
		buf_addf(out, "%s: ", obj->origin);
	diff_key_format(&obj->key, out);
}

/*
 * One object: sops decrypts it; *out is the plaintext object (new
 * reference) with the same identity.
 */
static int decrypt_one(const struct diff_object *obj, const char *bin,
		       char *const *env, const struct proc_options *base,
		       json_t **out, struct err *err)
{
	const char *argv[] = {bin,
			      "decrypt",
			      "--input-type",
			      "json",
			      "--output-type",
			      "json",
			      "/dev/stdin",
			      NULL};
	struct proc_options o = *base;
	struct proc_result res = PROC_RESULT_INIT;
	struct buf name = BUF_INIT, why = BUF_INIT;
	struct diff_key key = {0};
	struct err perr = ERR_INIT;
	char *in = NULL;
	json_t *plain = NULL;
	int error = 0;

	*out = NULL;
	name_of(obj, &name);
	if (!(in = json_dumps(obj->json, JSON_COMPACT))) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory",
				buf_cstr(&name));
		goto out;
	}
	o.env = env;
	o.stdin_data = in;
	o.stdin_len = strlen(in);
	error = proc_run(&res, argv, &o, &perr);
	if (error == ERR_NOTFOUND) {
		error = err_set(
			err, ERR_NOTFOUND,
			"%s: sops: `%s` not found%s (decryption.sopsBin)",
			buf_cstr(&name), bin,
			strchr(bin, '/') ? "" : " in PATH");
		goto out;
	}
	if (error < 0) {
		/* Timed out, or its output over the cap: proc's message. */
		error = err_set(err, error, "%s: sops: %s", buf_cstr(&name),
				err_first(&perr));
		goto out;
	}
	if (!res.exited || res.exit_code != 0) {
		reason(&res.errout, &res, &why);
		error = err_set(err, ERR_INVALID,
				"%s: sops: cannot decrypt: %s", buf_cstr(&name),
				buf_cstr(&why));
		goto out;
	}
	plain = json_loadb(res.out.ptr ? res.out.ptr : "", res.out.len, 0,
			   NULL);
	if (!json_is_object(plain) || json_object_get(plain, "sops")) {
		error = err_set(err, ERR_INVALID,
				"%s: sops: the decrypted output is not one "
				"object",
				buf_cstr(&name));
		goto out;
	}
	/* Only values are encrypted: what it is stays what it was. */
	if (diff_key_from_object(&key, plain, NULL) < 0 ||
	    !diff_key_equal(&key, &obj->key)) {
		error = err_set(
			err, ERR_INVALID,
			"%s: sops: the decrypted object has another "
			"identity (apiVersion, kind, name and namespace "
			"must not be encrypted)",
			buf_cstr(&name));
		goto out;
	}
	*out = plain;
	plain = NULL;
out:
	if (res.out.ptr)
		explicit_bzero(res.out.ptr, res.out.len);
	proc_result_release(&res);
	diff_key_release(&key);
	json_decref(plain);
	free(in);
	buf_release(&name);
	buf_release(&why);
	err_release(&perr);
	return error;
}

/* The identities in a memfd, its path in `path` (closed by the caller). */
static int identities_memfd(const struct buf *ids, int *fd, char *path,
			    size_t size, struct err *err)
{
	*fd = memfd_create("sops-age-identities", MFD_CLOEXEC);
	if (*fd < 0)
		return err_set(err, ERR_IO, "decryption: memfd_create: %s",
			       err_errno_str(errno));
	if (ids->len && file_write_all(*fd, ids->ptr, ids->len) < 0)
		return err_set(err, ERR_IO, "decryption: memfd: %s",
			       err_errno_str(errno));
	snprintf(path, size, "/proc/self/fd/%d", *fd);
	return 0;
}

int app_decrypt(struct diff_objset *set, const struct app_spec *s,
		const struct buf *identities, struct err *err)
{
	const struct app_decryption *d = &s->decryption;
	struct proc_options o = PROC_OPTIONS_INIT;
	struct buf name = BUF_INIT, bin = BUF_INIT;
	char path[64], var[DECRYPT_ENV_MAX], cwd[DECRYPT_ENV_MAX / 2];
	char *env[] = {var, NULL};
	const char *key_file = d->age_key_file;
	int fd = -1, error = 0;

	if (!app_decrypt_needed(set))
		return 0;
	if (!d->sops) {
		for (size_t i = 0; i < set->len; i++) {
			if (!json_object_get(set->items[i]->json, "sops"))
				continue;
			name_of(set->items[i], &name);
			error = err_set(err, ERR_INVALID,
					"%s: encrypted with SOPS, and the app "
					"has no decryption (decryption: "
					"{provider: sops} with its age keys; "
					"syncd diff|sync "
					"--decrypt-age-key-file)",
					buf_cstr(&name));
		}
		goto out;
	}
	if (identities) {
		if ((error = identities_memfd(identities, &fd, path,
					      sizeof(path), err)) < 0)
			goto out;
		key_file = path;
		o.inherit_fd = fd;
	}
	if (!key_file) {
		error = err_set(err, ERR_USAGE,
				"decryption: no age identities (ageKeyFile, or "
				"secretRef in an App)");
		goto out;
	}
	/* sops runs in /: a relative file is syncd's working directory's. */
	if (key_file[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd))) {
			error = err_set(err, ERR_IO,
					"decryption: working directory: %s",
					err_errno_str(errno));
			goto out;
		}
	}
	if ((size_t)snprintf(var, sizeof(var), "SOPS_AGE_KEY_FILE=%s%s%s",
			     key_file[0] == '/' ? "" : cwd,
			     key_file[0] == '/' ? "" : "/",
			     key_file) >= sizeof(var)) {
		error = err_set(err, ERR_LIMIT,
				"decryption: ageKeyFile: the "
				"path is too long");
		goto out;
	}
	if (d->sops_bin) {
		if ((error = render_tool_program(&bin, d->sops_bin, err)) < 0)
			goto out;
	} else if (buf_adds(&bin, "sops") < 0) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	/* sops looks for .sops.yaml upwards from where it runs: not here. */
	o.cwd = "/";
	o.timeout_ms = s->render_timeout_ms ? s->render_timeout_ms
					    : DECRYPT_TIMEOUT_MS;
	o.stdout_cap = DECRYPT_MAX_OUTPUT;
	o.stderr_cap = DECRYPT_MAX_STDERR;
	for (size_t i = 0; i < set->len; i++) {
		struct diff_object *obj = set->items[i];
		json_t *plain = NULL;
		int e;

		if (!json_object_get(obj->json, "sops"))
			continue;
		e = decrypt_one(obj, buf_cstr(&bin), env, &o, &plain, err);
		if (e == ERR_NOMEM || e == ERR_NOTFOUND) {
			error = e;
			goto out; /* the same for every object */
		}
		if (e < 0) {
			error = error ? error : e;
			continue;
		}
		json_decref(obj->json);
		obj->json = plain;
		obj->sensitive = true;
	}
out:
	if (fd >= 0)
		close(fd);
	explicit_bzero(var, sizeof(var));
	buf_release(&name);
	buf_release(&bin);
	return error;
}
