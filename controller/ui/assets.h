/*
 * The browser view's files (the .html, .js and .css of controller/ui/),
 * embedded at build time: controller/ui/embed.sh writes them as C arrays
 * into $(BUILD)/gen/ui_assets.c, a source of libcontroller. Nothing is
 * read from the disk at run time. Private to controller/httpd.c.
 */
#ifndef SYNCD_CONTROLLER_UI_ASSETS_H
#define SYNCD_CONTROLLER_UI_ASSETS_H

#include <stddef.h>

struct httpd_asset {
	const char *path;	   /* URL path: "/" (index.html), "/ui/NAME" */
	const char *type;	   /* the Content-Type */
	const char *etag;	   /* a quoted digest of the contents */
	const unsigned char *data; /* len bytes, then a NUL */
	size_t len;
};

/*
 * The file served at the URL path `path`, or NULL when there is none.
 * Static storage: the caller neither owns nor frees it.
 */
const struct httpd_asset *httpd_asset_find(const char *path);

#endif
