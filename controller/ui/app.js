/*
 * syncd's drift view: a read-only page over the JSON API of `syncd run`
 * (docs/ui.md; the documents: docs/http-api.md, docs/drift-report.md).
 * The URL hash routes: "#/" the apps, "#/apps/NAME" one app. The data is
 * fetched again every 5 s and on every hash change.
 *
 * Every value that comes from the cluster or from Git becomes a text node
 * (createTextNode, textContent) or an attribute set with setAttribute: no
 * string is ever parsed as HTML here, so a value such as
 * "<img src=x onerror=alert(1)>" shows as those characters. The server's
 * Content-Security-Policy (no inline script, no other origin) is the
 * second wall.
 */
(function () {
	'use strict';

	var POLL_MS = 5000;
	var TOKEN_KEY = 'syncd.apiToken';
	var seq = 0; /* the latest refresh: answers to older ones are dropped */
	var shown = ''; /* the route and document on screen, to skip redraws */

	function byId(id) {
		return document.getElementById(id);
	}

	/* --- building nodes ------------------------------------------------ */

	/* Append `c`: a node, text (as a text node), a list, or nothing. */
	function add(parent, c) {
		if (c === null || c === undefined || c === false)
			return;
		if (Array.isArray(c)) {
			c.forEach(function (x) {
				add(parent, x);
			});
			return;
		}
		if (c instanceof Node)
			parent.appendChild(c);
		else
			parent.appendChild(document.createTextNode(String(c)));
	}

	/*
	 * el(tag, attrs, child...): an element. Attribute names are always
	 * written here in the code; values go through setAttribute, which
	 * never parses markup.
	 */
	function el(tag, attrs) {
		var e = document.createElement(tag), k, i;

		for (k in attrs || {}) {
			if (Object.prototype.hasOwnProperty.call(attrs, k) &&
			    attrs[k] !== null && attrs[k] !== undefined)
				e.setAttribute(k, String(attrs[k]));
		}
		for (i = 2; i < arguments.length; i++)
			add(e, arguments[i]);
		return e;
	}

	function muted(text) {
		return el('span', {'class': 'muted'}, text);
	}

	/* Colour classes come from this table, never from the data. */
	var TONES = {
		InSync: 'ok', Healthy: 'ok', success: 'ok',
		Drifted: 'warn', Progressing: 'warn', Fighting: 'warn',
		Missing: 'warn', Orphan: 'warn', Suspended: 'info',
		Foreign: 'info',
		Failed: 'bad', Degraded: 'bad', failure: 'bad',
		Warning: 'warn'
	};

	/* map[key] when map has it as its own, else `dflt`. */
	function pick(map, key, dflt) {
		return Object.prototype.hasOwnProperty.call(map, key) ?
			map[key] : dflt;
	}

	function badge(word) {
		var w = word === null || word === undefined ? 'Unknown' : String(word);

		return el('span', {'class': 'badge tone-' + pick(TONES, w, 'none')}, w);
	}

	function isObj(v) {
		return v !== null && typeof v === 'object' && !Array.isArray(v);
	}

	function str(v) {
		return typeof v === 'string' ? v : '';
	}

	/* Any JSON value as text: strings as they are, the rest as JSON. */
	function text(v) {
		if (v === null || v === undefined)
			return '';
		if (typeof v === 'string')
			return v;
		if (typeof v === 'number' || typeof v === 'boolean')
			return String(v);
		if (Array.isArray(v) && v.every(function (x) {
			return typeof x === 'string' || typeof x === 'number';
		}))
			return v.join(', ');
		if (isObj(v) && typeof v.kind === 'string' &&
		    typeof v.name === 'string')
			return ident(v);
		return JSON.stringify(v);
	}

	/* A desired or live value: absent, a string, or JSON. */
	function value(v) {
		if (v === undefined)
			return muted('(absent)');
		return el('code', {'class': 'value'},
			  typeof v === 'string' ? v : JSON.stringify(v, null, 1));
	}

	/* "Deployment.apps prod/web", as `syncd status` names objects. */
	function ident(o) {
		var kind = str(o.kind) + (str(o.group) ? '.' + o.group : '');

		return kind + ' ' + (str(o.namespace) ? o.namespace + '/' : '') +
			str(o.name);
	}

	function ago(t) {
		var ms = Date.parse(t), s;

		if (isNaN(ms))
			return '';
		s = Math.max(0, Math.round((Date.now() - ms) / 1000));
		if (s < 60)
			return s + 's ago';
		if (s < 3600)
			return Math.floor(s / 60) + 'm ago';
		if (s < 86400)
			return Math.floor(s / 3600) + 'h ago';
		return Math.floor(s / 86400) + 'd ago';
	}

	/* An RFC 3339 time with how long ago it was. */
	function when(t) {
		if (typeof t !== 'string' || !t)
			return muted('never');
		return el('span', {'class': 'when'}, el('time', {datetime: t}, t),
			  el('span', {'class': 'muted'}, ' (' + ago(t) + ')'));
	}

	function table(cls, heads, rows) {
		return el('div', {'class': 'scroll'},
			el('table', {'class': cls},
				el('thead', null, el('tr', null, heads.map(function (h) {
					return el('th', {scope: 'col'}, h);
				}))),
				el('tbody', null, rows)));
	}

	function none() {
		return el('p', {'class': 'none muted'}, 'none');
	}

	function section(id, title) {
		var s = el('section', {id: id}, el('h2', null, title)), i;

		for (i = 2; i < arguments.length; i++)
			add(s, arguments[i]);
		return s;
	}

	/* --- the apps ------------------------------------------------------- */

	function appLink(name) {
		return el('a', {href: '#/apps/' + encodeURIComponent(name)}, name);
	}

	function shortRev(r) {
		if (typeof r !== 'string' || !r)
			return muted('none yet');
		var m = /^(.*@)?sha256:([0-9a-f]+)$/.exec(r);
		return el('code', {title: r}, m ? (m[1] || 'sha256:') + m[2].slice(0, 7) : r.slice(0, 7));
	}

	function lastSync(ls) {
		if (!isObj(ls))
			return muted('never');
		return [when(ls.time), ' ', badge(ls.result)];
	}

	function errors(a) {
		var out = [];

		if (a.error)
			out.push(el('div', {'class': 'err'}, text(a.error)));
		if (a.sourceError)
			out.push(el('div', {'class': 'err'}, 'source: ',
				    text(a.sourceError)));
		return out.length ? out : muted('none');
	}

	function healthCell(h) {
		h = isObj(h) ? h : {};
		return [badge(h.status),
			h.message ? el('div', {'class': 'msg'}, text(h.message)) : null];
	}

	function count(n) {
		var v = typeof n === 'number' ? n : 0;

		return el('td', {'class': 'num' + (v ? ' nonzero' : '')}, String(v));
	}

	function appsPage(doc) {
		var apps = Array.isArray(doc.apps) ? doc.apps : [];
		var rows = apps.filter(isObj).map(function (a) {
			var s = isObj(a.summary) ? a.summary : {};

			return el('tr', {'class': 'app'},
				el('th', {scope: 'row'}, appLink(str(a.name))),
				el('td', null, healthCell(a.health)),
				el('td', null, badge(a.state)),
				el('td', null, shortRev(a.revision)),
				count(s.drifted), count(s.foreign), count(s.fighting),
				el('td', null, lastSync(a.lastSync)),
				el('td', null, errors(a)));
		});

		document.title = 'syncd';
		return el('div', {id: 'apps'}, el('h1', null, 'Apps'),
			rows.length ?
				table('apps', ['App', 'Health', 'State', 'Revision',
					'Drifted', 'Foreign', 'Fighting', 'Last sync',
					'Error'], rows) :
				el('p', {'class': 'muted'}, 'No apps are configured.'));
	}

	/* --- one app -------------------------------------------------------- */

	function dl(pairs) {
		return el('dl', {'class': 'facts'}, pairs.map(function (p) {
			return [el('dt', null, p[0]), el('dd', null, p[1])];
		}));
	}

	var COUNTS = [['objects', 'objects'], ['inSync', 'in sync'],
		['drifted', 'drifted'], ['missing', 'missing'],
		['orphan', 'orphan'], ['foreign', 'foreign'],
		['fighting', 'fighting'], ['fields', 'fields differ'],
		['foreignFields', 'foreign fields'],
		['fightingFields', 'fighting fields'],
		['ignoredFields', 'ignored fields']];

	function counts(s) {
		s = isObj(s) ? s : {};
		return el('ul', {'class': 'counts'}, COUNTS.map(function (c) {
			var v = typeof s[c[0]] === 'number' ? s[c[0]] : 0;

			return el('li', {'class': v ? 'nonzero' : null},
				  el('strong', null, String(v)), ' ', c[1]);
		}));
	}

	function managers(list) {
		if (!Array.isArray(list) || !list.length)
			return muted('nobody');
		return el('ul', {'class': 'managers'}, list.filter(isObj).map(function (m) {
			var how = [str(m.kind), str(m.operation), str(m.subresource)]
				.filter(Boolean).join(', ');

			return el('li', null, el('strong', {'class': 'manager'}, text(m.manager)),
				how ? ' (' + how + ')' : '',
				m.time ? [' ', when(m.time)] : null);
		}));
	}

	function fightText(f) {
		if (!isObj(f))
			return '';
		return 'fighting: ' + text(f.managers) + '; ' +
			(typeof f.changes === 'number' ? f.changes : '?') +
			' changes back' + (f.since ? ', held since ' + f.since : '');
	}

	var OWNERS = {self: 'owner-self', foreign: 'owner-foreign',
		fighting: 'owner-fighting'};

	function fieldRows(obj) {
		var fields = Array.isArray(obj.fields) ? obj.fields : [];

		return fields.filter(isObj).map(function (f) {
			return el('tr', {'class': 'field ' + pick(OWNERS, f.owner, '')},
				el('td', null, el('code', {'class': 'path'}, text(f.path))),
				el('td', null, text(f.change)),
				el('td', null, text(f.owner),
					f.fight ? el('div', {'class': 'msg'}, fightText(f.fight)) : null),
				el('td', null, value(f.desired)),
				el('td', null, value(f.live)),
				el('td', null, managers(f.managers)),
				el('td', null, when(f.firstSeen)));
		});
	}

	function objectBlock(o) {
		var h = isObj(o.health) ? o.health : null;
		var rows = fieldRows(o);
		var warnings = Array.isArray(o.warnings) ? o.warnings : [];

		return el('article', {'class': 'object'},
			el('h3', null, ident(o), ' ', badge(o.state),
				h ? [' ', badge(h.status)] : null),
			h && h.message ? el('p', {'class': 'msg'}, 'health: ', text(h.message)) : null,
			o.origin ? el('p', {'class': 'muted'}, 'from ', text(o.origin)) : null,
			warnings.length ? el('ul', {'class': 'warnings'}, warnings.map(function (w) {
				return el('li', null, text(w));
			})) : null,
			rows.length ?
				table('fields', ['Field', 'Change', 'Owner', 'Desired', 'Live',
					'Changed by', 'Since'], rows) :
				el('p', {'class': 'muted'},
				   o.state === 'Missing' ? 'not in the cluster' :
				   o.state === 'Orphan' ? 'no longer desired: a prune candidate' :
				   'no differing field'));
	}

	function objectsSection(report) {
		var objs;

		if (!isObj(report))
			return section('objects', 'Objects not in sync',
				el('p', {'class': 'muted'}, 'No pass has compared this app yet.'));
		objs = (Array.isArray(report.objects) ? report.objects : [])
			.filter(function (o) {
				return isObj(o) && o.state !== 'InSync';
			});
		return section('objects', 'Objects not in sync',
			objs.length ? objs.map(objectBlock) : none());
	}

	function fightsSection(report) {
		var rows = [];

		if (isObj(report) && Array.isArray(report.objects)) {
			report.objects.filter(isObj).forEach(function (o) {
				(Array.isArray(o.fields) ? o.fields : []).filter(isObj)
					.forEach(function (f) {
						var fi = isObj(f.fight) ? f.fight : {};

						if (f.owner !== 'fighting')
							return;
						rows.push(el('tr', null,
							el('td', null, ident(o)),
							el('td', null, el('code', {'class': 'path'}, text(f.path))),
							el('td', null, text(fi.managers)),
							el('td', {'class': 'num'}, text(fi.changes)),
							el('td', null, when(fi.since))));
					});
			});
		}
		return section('fights', 'Fights', rows.length ?
			table('fights', ['Object', 'Field', 'Managers', 'Changes',
				'Held since'], rows) : none());
	}

	function healthSection(h) {
		var objs;

		h = isObj(h) ? h : {};
		objs = (Array.isArray(h.objects) ? h.objects : []).filter(isObj);
		return section('health', 'Health',
			el('p', null, badge(h.status), ' ', text(h.message)),
			objs.length ?
				table('health', ['Object', 'Health', 'Why'], objs.map(function (o) {
					return el('tr', null, el('td', null, text(o.object)),
						el('td', null, badge(o.status)),
						el('td', null, text(o.message)));
				})) :
				el('p', {'class': 'muted'}, 'Every object is healthy, or none was read yet.'));
	}

	function diffSection(d) {
		return section('diff', 'Diff', typeof d === 'string' && d ?
			el('pre', {'class': 'diff'}, d) : none());
	}

	function listSection(id, title, list, heads, cells) {
		var rows = (Array.isArray(list) ? list : []).filter(isObj);

		return section(id, title, rows.length ?
			table(id, heads, rows.map(function (x) {
				return el('tr', null, cells(x).map(function (c) {
					return el('td', null, c);
				}));
			})) : none());
	}

	function appPage(doc) {
		var name = str(doc.name);

		document.title = name + ' · syncd';
		return el('div', {id: 'app'},
			el('p', null, el('a', {href: '#/'}, '← all apps')),
			el('h1', null, name, ' ', badge(doc.state), ' ',
				badge(isObj(doc.health) ? doc.health.status : null)),
			section('summary', 'Summary',
				dl([['Repository', text(doc.repo)],
					['Path', text(doc.path) || muted('(root)')],
					['Revision', typeof doc.revision === 'string' ?
						el('code', null, doc.revision) : muted('none yet')],
					['State', badge(doc.state)],
					['Last sync', lastSync(doc.lastSync)],
					['Out of sync since', doc.driftSince ?
						when(doc.driftSince) : muted('in sync')],
					['Error', errors(doc)]]),
				counts(doc.summary)),
			healthSection(doc.health),
			objectsSection(doc.report),
			fightsSection(doc.report),
			diffSection(doc.diff),
			listSection('events', 'Events', doc.events,
				['Time', 'Type', 'Reason', 'Object', 'Note'],
				function (e) {
					return [when(e.time), badge(e.type), text(e.reason),
						text(e.object), text(e.note)];
				}),
			listSection('history', 'History', doc.history,
				['Revision', 'Time', 'Result', 'Message', 'Applied',
					'Pruned'],
				function (x) {
					return [shortRev(x.revision), when(x.time), badge(x.result),
						text(x.message), text(x.applied), text(x.pruned)];
				}));
	}

	function unknownApp(name) {
		document.title = 'syncd';
		return el('div', {id: 'app'},
			el('p', null, el('a', {href: '#/'}, '← all apps')),
			el('h1', null, name),
			el('p', null, 'This controller has no app of that name.'));
	}

	/* --- the token ---------------------------------------------------- */

	function getToken() {
		try {
			return sessionStorage.getItem(TOKEN_KEY) || '';
		} catch (e) {
			return '';
		}
	}

	function setToken(t) {
		try {
			if (t)
				sessionStorage.setItem(TOKEN_KEY, t);
			else
				sessionStorage.removeItem(TOKEN_KEY);
		} catch (e) {
			/* storage refused: the token lasts until the next load */
		}
		byId('forget').hidden = !t;
	}

	function tokenPage(refused) {
		var input = el('input', {type: 'password', id: 'token', name: 'token',
			autocomplete: 'off', required: 'required', spellcheck: 'false'});
		var form = el('form', {id: 'token-form', 'class': 'token'},
			el('h1', null, 'API token'),
			el('p', null, refused ? 'The token was refused. ' : '',
				'This syncd needs a bearer token to show its apps ' +
				'(the contents of its api.tokenFile). It is kept in ' +
				'this tab only.'),
			el('label', {'for': 'token'}, 'Token'), ' ', input, ' ',
			el('button', {type: 'submit'}, 'Show the apps'));

		form.addEventListener('submit', function (ev) {
			ev.preventDefault();
			setToken(input.value.trim());
			shown = '';
			refresh();
		});
		return form;
	}

	/* --- fetching ----------------------------------------------------- */

	function failure(message, props) {
		var e = new Error(message), k;

		for (k in props)
			e[k] = props[k];
		return e;
	}

	/* GET a JSON document of the API: {doc, text}; errors carry .status. */
	function getJSON(path) {
		var headers = {Accept: 'application/json'}, t = getToken();

		if (t)
			headers.Authorization = 'Bearer ' + t;
		return fetch(path, {headers: headers, cache: 'no-store',
			credentials: 'omit', redirect: 'error'})
			.then(function (r) {
				return r.text().then(function (body) {
					var doc = null;

					try {
						doc = JSON.parse(body);
					} catch (e) {
						doc = null;
					}
					if (!r.ok)
						throw failure('GET ' + path + ': HTTP ' + r.status +
							(isObj(doc) && typeof doc.error === 'string' ?
								': ' + doc.error : ''), {status: r.status});
					if (!isObj(doc))
						throw failure('GET ' + path + ': not a JSON document', {});
					return {doc: doc, text: body};
				});
			});
	}

	function route() {
		var h = location.hash || '#/', m = /^#\/apps\/([^/]+)\/?$/.exec(h);

		if (m) {
			try {
				return {app: decodeURIComponent(m[1])};
			} catch (e) {
				return {bad: true};
			}
		}
		return h === '#/' || h === '#' ? {} : {bad: true};
	}

	function show(node, key) {
		shown = key;
		byId('view').replaceChildren(node);
	}

	function showError(msg) {
		var b = byId('error');

		b.textContent = msg;
		b.hidden = false;
	}

	function stamp() {
		byId('error').hidden = true;
		byId('updated').textContent = 'updated ' +
			new Date().toLocaleTimeString();
	}

	function refresh() {
		var my = ++seq, r = route(), path;

		if (r.bad) {
			show(el('p', null, 'Nothing here. ', el('a', {href: '#/'}, 'All apps')), 'bad');
			return;
		}
		path = r.app === undefined ? 'api/v1/apps' :
			'api/v1/apps/' + encodeURIComponent(r.app);
		getJSON(path).then(function (got) {
			var key = path + '\n' + got.text;

			if (my !== seq)
				return;
			byId('leader').textContent = got.doc.leader === false ?
				'standby: this replica does not write' :
				'leader: this replica writes';
			if (key !== shown)
				show(r.app === undefined ? appsPage(got.doc) :
					appPage(got.doc), key);
			stamp();
		}, function (err) {
			if (my !== seq)
				return;
			if (err.status === 401) {
				/* A token that was refused is dropped. */
				var refused = !!getToken();

				if (refused)
					setToken('');
				if (shown !== 'token' || refused)
					show(tokenPage(refused), 'token');
				byId('error').hidden = true;
				byId('updated').textContent = 'needs a token';
				return;
			}
			if (err.status === 404 && r.app !== undefined) {
				show(unknownApp(r.app), path + '\n404');
				stamp();
				return;
			}
			showError('Cannot refresh: ' + (err.message || String(err)) +
				(shown ? ' (the page shows what was last read)' : ''));
		});
	}

	function start() {
		byId('forget').hidden = !getToken();
		byId('forget').addEventListener('click', function () {
			setToken('');
			shown = '';
			refresh();
		});
		window.addEventListener('hashchange', refresh);
		setInterval(refresh, POLL_MS);
		refresh();
	}

	if (document.readyState === 'loading')
		document.addEventListener('DOMContentLoaded', start);
	else
		start();
}());
