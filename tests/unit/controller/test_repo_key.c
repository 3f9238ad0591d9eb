#include <criterion/criterion.h>

#include "controller/controller.h"

/* Push webhooks name a repository by several URLs; all compare equal. */
struct key_case {
	const char *url;
	const char *key;
};

static const struct key_case cases[] = {
	{"https://github.com/org/repo.git", "github.com/org/repo"},
	{"https://github.com/org/repo", "github.com/org/repo"},
	{"https://GitHub.com/org/repo/", "github.com/org/repo"},
	{"git@github.com:org/repo.git", "github.com/org/repo"},
	{"ssh://git@github.com/org/repo.git", "github.com/org/repo"},
	{"ssh://git@github.com:22/org/repo", "github.com/org/repo"},
	{"https://user:secret@github.com/org/repo.git",
	 "github.com/org/repo"},
	{"git://github.com/org/repo.git", "github.com/org/repo"},
	{"https://gitlab.example.com:8443/group/sub/proj.git",
	 "gitlab.example.com/group/sub/proj"},
	{"file:///srv/git/app.git", "/srv/git/app"},
	{"file:///srv/git/app", "/srv/git/app"},
};

Test(repo_key, forms)
{
	struct buf out = BUF_INIT;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		controller_repo_key(cases[i].url, &out);
		cr_assert_str_eq(buf_cstr(&out), cases[i].key, "%s -> %s", buf_cstr(&out),
				 cases[i].url);
	}
	buf_release(&out);
}

Test(repo_key, case_of_the_path_is_kept)
{
	struct buf a = BUF_INIT, b = BUF_INIT;

	controller_repo_key("https://github.com/Org/Repo", &a);
	controller_repo_key("https://github.com/org/repo", &b);
	cr_assert_str_neq(buf_cstr(&a), buf_cstr(&b));
	buf_release(&a);
	buf_release(&b);
}
