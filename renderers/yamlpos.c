/*
 * Where each node of a YAML document is: the line numbers that
 * render_parse() does not keep, for messages such as config errors that
 * must point at one key. Values still come from render_parse(); this pass
 * only walks libyaml's events, so the two agree on structure.
 */
#include <string.h>
#include <yaml.h>

#include "renderers/render.h"
#include "util/buf.h"

#include "util/banned.h" /* last */

/* One open collection: its JSON pointer and where its entries are. */
struct pos_frame {
	size_t path_len; /* length of the collection's pointer */
	bool map;
	bool want_key;	   /* map: the next node is a key */
	size_t index;	   /* seq: index of the next item */
	unsigned key_line; /* map: line of the current key */
};

static int add_escaped(struct buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int error;

		if (s[i] == '~')
			error = buf_adds(b, "~0");
		else if (s[i] == '/')
			error = buf_adds(b, "~1");
		else
			error = buf_addch(b, s[i]);
		if (error < 0)
			return error;
	}
	return 0;
}

int render_yaml_lines(json_t **out, const char *data, size_t len,
		      const char *name, struct err *err)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	struct pos_frame stack[RENDER_MAX_DEPTH];
	size_t depth = 0;
	struct buf path = BUF_INIT;
	json_t *lines = json_object();
	bool done = false;
	int error = 0;

	*out = NULL;
	memset(&ev, 0, sizeof(ev));
	if (!lines)
		return err_set(err, ERR_NOMEM, "%s: out of memory", name);
	if (!yaml_parser_initialize(&parser)) {
		json_decref(lines);
		return err_set(err, ERR_NOMEM, "%s: out of memory", name);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	if ((error = buf_adds(&path, "")) < 0)
		goto nomem;

	while (!done) {
		struct pos_frame *top = depth ? &stack[depth - 1] : NULL;
		unsigned line;
		bool start;

		if (!yaml_parser_parse(&parser, &ev)) {
			error = err_set(
				err, ERR_PARSE, "%s:%lu:%lu: %s", name,
				(unsigned long)parser.problem_mark.line + 1,
				(unsigned long)parser.problem_mark.column + 1,
				parser.problem ? parser.problem
					       : "malformed YAML");
			goto out;
		}
		line = (unsigned)ev.start_mark.line + 1;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
		case YAML_DOCUMENT_END_EVENT:
			done = true;
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			if (depth) {
				depth--;
				buf_truncate(&path, stack[depth].path_len);
				top = depth ? &stack[depth - 1] : NULL;
				if (top && top->map)
					top->want_key = true;
				else if (top)
					top->index++;
				if (top)
					buf_truncate(&path, top->path_len);
			}
			break;
		case YAML_SCALAR_EVENT:
		case YAML_ALIAS_EVENT:
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT:
			start = ev.type == YAML_MAPPING_START_EVENT ||
				ev.type == YAML_SEQUENCE_START_EVENT;
			if (top && top->map && top->want_key) {
				/* A key: remember it; its value follows. */
				buf_truncate(&path, top->path_len);
				if ((error = buf_addch(&path, '/')) < 0)
					goto nomem;
				if (ev.type == YAML_SCALAR_EVENT &&
				    (error = add_escaped(
					     &path,
					     (const char *)ev.data.scalar.value,
					     ev.data.scalar.length)) < 0)
					goto nomem;
				top->key_line = line;
				top->want_key = false;
				if (start) {
					error = err_set(err, ERR_PARSE,
							"%s:%u: complex keys "
							"are not supported",
							name, line);
					goto out;
				}
				break;
			}
			if (top && !top->map) {
				buf_truncate(&path, top->path_len);
				if ((error = buf_addf(&path, "/%zu",
						      top->index)) < 0)
					goto nomem;
			}
			if (top && top->map)
				line = top->key_line;
			if (json_object_set_new(lines, buf_cstr(&path),
						json_integer(line)) < 0)
				goto nomem;
			if (start) {
				if (depth == RENDER_MAX_DEPTH) {
					error = err_set(err, ERR_LIMIT,
							"%s:%u: nesting too "
							"deep",
							name, line);
					goto out;
				}
				stack[depth].path_len = path.len;
				stack[depth].map =
					ev.type == YAML_MAPPING_START_EVENT;
				stack[depth].want_key = true;
				stack[depth].index = 0;
				stack[depth].key_line = line;
				depth++;
			} else if (top && top->map) {
				top->want_key = true;
				buf_truncate(&path, top->path_len);
			} else if (top) {
				top->index++;
				buf_truncate(&path, top->path_len);
			}
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
		memset(&ev, 0, sizeof(ev));
	}
	*out = lines;
	lines = NULL;
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "%s: out of memory", name);
out:
	yaml_event_delete(&ev);
	yaml_parser_delete(&parser);
	buf_release(&path);
	json_decref(lines);
	return error;
}
