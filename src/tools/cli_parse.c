/*
 * cli_parse.c — the command-line parser of softrnic's programs
 * (cli_parse.h says what it does; the command tables are in
 * tools/softrnic.c, kv/kv_cli.c, nvmf/nvmf_cli.c and tools/cmd_sim.c).
 *
 * The rules, the same for every command:
 *   - "--name VALUE" and "--name=VALUE"; "-x VALUE" and "-xVALUE" for an
 *     option with a one-letter name; "--" ends the options; "-" alone and
 *     "-5" (a negative number) are positional arguments;
 *   - -h/--help anywhere among the options (before "--") wins over
 *     everything else, even a bad value before it;
 *   - the last of a repeated option wins.
 */
#include "tools/cli_parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WRAP 79

int cli_error(const struct cli_args *a, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", a->path, msg);
	return 2;
}

/* ---- values ------------------------------------------------------------------ */

/* A size as the shortest exact text ("64m", "1t", "1000"), else with one
 * decimal ("7.6g"). */
static void format_size(unsigned long long v, char *out, size_t cap)
{
	static const char units[] = "kmgt";

	for (int i = 3; i >= 0; i--) {
		unsigned long long unit = 1ull << (10 * (i + 1));
		if (v >= unit && v % unit == 0) {
			snprintf(out, cap, "%llu%c", v / unit, units[i]);
			return;
		}
	}
	for (int i = 3; i >= 0; i--) {
		unsigned long long unit = 1ull << (10 * (i + 1));
		if (v >= unit) {
			snprintf(out, cap, "%.1f%c", (double)v / (double)unit, units[i]);
			return;
		}
	}
	snprintf(out, cap, "%llu", v);
}

static unsigned long long phys_mem(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	return pages > 0 && page > 0 ? (unsigned long long)pages * (unsigned long long)page : ~0ull;
}

/* Decimal digits only (no sign, no space, no 0x): what a user means. */
static bool parse_digits(const char *s, const char **end, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return false;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (~0ull - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*end = p;
	*out = v;
	return true;
}

static bool is_pow2(unsigned long long v)
{
	return v && !(v & (v - 1));
}

/* Checks text against o into *v; false with the reason in why. */
static bool parse_value(const struct cli_opt *o, const char *text, struct cli_val *v, char *why, size_t cap)
{
	const char *end;
	char lo[32], hi[32];

	v->set = true;
	v->text = text;
	switch (o->type) {
	case CLI_FLAG:
	case CLI_STRING:
		return true;
	case CLI_UINT:
		if (!parse_digits(text, &end, &v->u) || *end) {
			snprintf(why, cap, "not %s", o->what ? o->what : "a whole number");
			if (o->max != ~0ull)
				snprintf(why + strlen(why), cap - strlen(why), " (%llu-%llu)", o->min, o->max);
			return false;
		}
		if (v->u < o->min || v->u > o->max) {
			if (o->what)
				snprintf(why, cap, "not %s (%llu-%llu)", o->what, o->min, o->max);
			else
				snprintf(why, cap, "not in %llu-%llu", o->min, o->max);
			return false;
		}
		if ((o->flags & CLI_POW2) && !is_pow2(v->u)) {
			snprintf(why, cap, "not a power of two");
			return false;
		}
		return true;
	case CLI_SIZE: {
		unsigned long long n, mul = 1;
		static const char units[] = "kmgt";
		const char *u;

		if (!parse_digits(text, &end, &n)) {
			snprintf(why, cap, "not a size (a number, then k, m, g or t)");
			return false;
		}
		if (*end && (u = strchr(units, tolower((unsigned char)*end))) != NULL) {
			mul = 1ull << (10 * (u - units + 1));
			end++;
		}
		if (*end) {
			snprintf(why, cap, "not a size (a number, then k, m, g or t)");
			return false;
		}
		format_size(o->max, hi, sizeof(hi));
		if (n > o->max / mul) {
			snprintf(why, cap, "more than %s, the most %s", hi, o->what ? o->what : "it takes");
			return false;
		}
		v->u = n * mul;
		if ((o->flags & CLI_PHYS_MEM) && v->u > phys_mem()) {
			format_size(phys_mem(), hi, sizeof(hi));
			snprintf(why, cap, "more than this machine's memory (%s)", hi);
			return false;
		}
		if (v->u < o->min) {
			format_size(o->min, lo, sizeof(lo));
			snprintf(why, cap, "less than %s", lo);
			return false;
		}
		if ((o->flags & CLI_POW2) && !is_pow2(v->u)) {
			format_size(o->min, lo, sizeof(lo));
			snprintf(why, cap, "not a power of two (%s-%s)", lo, hi);
			return false;
		}
		return true;
	}
	case CLI_DOUBLE: {
		char *dend;

		errno = 0;
		v->d = strtod(text, &dend);
		if (dend == text || *dend || errno || isspace((unsigned char)*text) || !(v->d >= o->dmin) ||
		    !(v->d <= o->dmax)) {
			if (o->what)
				snprintf(why, cap, "not %s (%g-%g)", o->what, o->dmin, o->dmax);
			else
				snprintf(why, cap, "not a number in %g-%g", o->dmin, o->dmax);
			return false;
		}
		return true;
	}
	case CLI_CHOICE:
		for (unsigned i = 0; o->choices[i]; i++)
			if (!strcmp(text, o->choices[i])) {
				v->u = i;
				return true;
			}
		snprintf(why, cap, "not one of");
		for (unsigned i = 0; o->choices[i]; i++)
			snprintf(why + strlen(why), cap - strlen(why), "%s %s", i ? "," : "", o->choices[i]);
		return false;
	}
	return false;
}

bool cli_check(const struct cli_args *a, const struct cli_opt *spec, const char *text, struct cli_val *v)
{
	char why[256];

	if (parse_value(spec, text, v, why, sizeof(why)))
		return true;
	cli_error(a, "%s %s: %s", spec->name, text, why);
	return false;
}

/* ---- help -------------------------------------------------------------------- */

struct line {
	FILE *out;
	size_t col, indent;
};

static void word(struct line *l, const char *w)
{
	size_t n = strlen(w);

	if (l->col + 1 + n > WRAP && l->col > l->indent) {
		fprintf(l->out, "\n%*s", (int)l->indent, "");
		l->col = l->indent;
	} else {
		fputc(' ', l->out);
		l->col++;
	}
	fputs(w, l->out);
	l->col += n;
}

static void value_name(const struct cli_opt *o, char *out, size_t cap)
{
	out[0] = 0;
	if (o->arg) {
		snprintf(out, cap, "%s", o->arg);
	} else if (o->type == CLI_CHOICE) {
		for (unsigned i = 0; o->choices[i]; i++)
			snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "|" : "", o->choices[i]);
	} else if (o->type != CLI_FLAG) {
		snprintf(out, cap, "%s", o->type == CLI_SIZE ? "SIZE" : o->type == CLI_STRING ? "TEXT" : "N");
	}
}

/* "--name ARG" or "-x ARG" (the long name when there is one). */
static void option_text(const struct cli_opt *o, bool both, char *out, size_t cap)
{
	char val[160];

	value_name(o, val, sizeof(val));
	if (both && o->short_name && o->name[1] == '-')
		snprintf(out, cap, "-%c, %s%s%s", o->short_name, o->name, val[0] ? " " : "", val);
	else
		snprintf(out, cap, "%s%s%s", o->name, val[0] ? " " : "", val);
}

static void synopsis(const struct cli_args *a, const struct cli_cmd *c, FILE *out)
{
	struct line l = { out, 0, 0 };
	char t[200];

	l.col = (size_t)fprintf(out, "usage: %s", a->path);
	l.indent = l.col + 1;
	if (l.indent > 30)
		l.indent = 8;
	if (c->subs) {
		word(&l, "COMMAND [ARGS]");
	} else {
		for (const struct cli_opt *o = c->opts; o && o->name; o++) {
			char ot[180];
			option_text(o, false, ot, sizeof(ot));
			snprintf(t, sizeof(t), "[%s]", ot);
			word(&l, t);
		}
		if (c->args && *c->args)
			word(&l, c->args);
	}
	fputc('\n', out);
}

static void list_commands(FILE *out, const struct cli_cmd *subs, const char *prefix, unsigned depth)
{
	char name[96];

	for (const struct cli_cmd *s = subs; s && s->name; s++) {
		if (s->flags & CLI_HIDDEN)
			continue;
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? " " : "", s->name);
		fprintf(out, "  %-*s %s\n", 16, name, s->summary);
		if (s->subs && depth < CLI_MAX_DEPTH)
			list_commands(out, s->subs, name, depth + 1);
	}
}

void cli_help(const struct cli_args *a, FILE *out)
{
	const struct cli_cmd *c = a->cmd;
	char t[200];

	synopsis(a, c, out);
	if (c->summary)
		fprintf(out, "  %s\n", c->summary);
	if (c->subs) {
		fprintf(out, "\ncommands:\n");
		list_commands(out, c->subs, "", 0);
	}
	fprintf(out, "\noptions:\n");
	for (const struct cli_opt *o = c->opts; o && o->name; o++) {
		option_text(o, true, t, sizeof(t));
		if (strlen(t) > 24)
			fprintf(out, "  %s\n  %-24s %s\n", t, "", o->help);
		else
			fprintf(out, "  %-24s %s\n", t, o->help);
	}
	fprintf(out, "  %-24s %s\n", "-h, --help", "this help, on stdout");
	if (a->depth == 0)
		fprintf(out, "  %-24s %s\n", "-V, --version", "the version");
	if (c->details)
		fprintf(out, "\n%s\n", c->details);
	if (c->subs)
		fprintf(out, "\n'%s COMMAND --help' gives a command's options.\n", a->path);
}

/* The hidden `help --commands`: every command path under c, one a line. */
static void print_paths(const struct cli_cmd *subs, const char *prefix, unsigned depth)
{
	char name[96];

	for (const struct cli_cmd *s = subs; s && s->name; s++) {
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? " " : "", s->name);
		printf("%s\n", name);
		if (s->subs && depth < CLI_MAX_DEPTH)
			print_paths(s->subs, name, depth + 1);
	}
}

/* ---- parsing ------------------------------------------------------------------ */

static bool is_help(const char *w)
{
	return !strcmp(w, "-h") || !strcmp(w, "--help");
}

/* An option word: starts with '-', is not "-" alone nor a negative number. */
static bool option_like(const char *w)
{
	return w[0] == '-' && w[1] && !isdigit((unsigned char)w[1]) && w[1] != '.';
}

static const struct cli_opt *find_option(const struct cli_cmd *c, const char *w, const char **attached)
{
	*attached = NULL;
	for (const struct cli_opt *o = c->opts; o && o->name; o++) {
		size_t n = strlen(o->name);
		if (w[1] == '-' && !strncmp(w, o->name, n) && (w[n] == 0 || w[n] == '=')) {
			if (w[n] == '=')
				*attached = w + n + 1;
			return o;
		}
		if (w[1] != '-' && o->short_name && w[1] == o->short_name) {
			if (w[2])
				*attached = w + 2;
			if (w[2] && o->type == CLI_FLAG)
				continue;
			return o;
		}
		if (w[1] != '-' && !o->short_name && !strcmp(w, o->name))
			return o;   /* a one-letter option spelled only "-v" */
	}
	return NULL;
}

static void push(struct cli_args *a, const struct cli_cmd *c)
{
	a->chain[++a->depth] = c;
	a->cmd = c;
	snprintf(a->path + strlen(a->path), sizeof(a->path) - strlen(a->path), " %s", c->name);
}

/* Is -h/--help among c's options in argv[i..]? */
static bool wants_help(const struct cli_cmd *c, int i, int argc, char **argv)
{
	for (; i < argc; i++) {
		const char *w = argv[i], *att;
		const struct cli_opt *o;
		if (!strcmp(w, "--"))
			return false;
		if (is_help(w))
			return true;
		if (!option_like(w)) {
			if (c->flags & CLI_STOP_AT_ARG)
				return false;
			continue;
		}
		o = find_option(c, w, &att);
		if (o && o->type != CLI_FLAG && !att)
			i++;
	}
	return false;
}

static int parse_leaf(struct cli_args *a, int i, int argc, char **argv)
{
	static char *pos[256];
	const struct cli_cmd *c = a->cmd;
	bool ended = false;
	char why[256];

	a->argc = 0;
	a->argv = pos;
	for (; i < argc; i++) {
		const char *w = argv[i], *att, *val;
		const struct cli_opt *o;

		if (!ended && !strcmp(w, "--")) {
			ended = true;
			continue;
		}
		if (ended || !option_like(w)) {
			if (c->flags & CLI_STOP_AT_ARG) {
				a->argv = argv + i;
				a->argc = argc - i;
				break;
			}
			if (a->argc >= (int)(sizeof(pos) / sizeof(pos[0])))
				return cli_error(a, "more than %zu arguments", sizeof(pos) / sizeof(pos[0]));
			pos[a->argc++] = argv[i];
			continue;
		}
		o = find_option(c, w, &att);
		if (!o)
			return cli_error(a, "unknown option %s ('%s --help' lists them)", w, a->path);
		if (o->type == CLI_FLAG) {
			if (att)
				return cli_error(a, "%s takes no value", o->name);
			a->vals[o - c->opts].set = true;
			continue;
		}
		val = att;
		if (!val) {
			if (i + 1 >= argc)
				return cli_error(a, "%s needs a value (%s)", o->name, o->arg ? o->arg : "see --help");
			val = argv[++i];
		}
		if (!parse_value(o, val, &a->vals[o - c->opts], why, sizeof(why)))
			return cli_error(a, "%s %s: %s", o->name, val, why);
	}
	if ((unsigned)a->argc < c->min_args)
		return cli_error(a, "%s missing (%s)", a->argc ? "an argument is" : "no argument given;",
				 c->args ? c->args : "see --help");
	if ((unsigned)a->argc > c->max_args)
		return cli_error(a, "unexpected argument '%s'", a->argv[c->max_args]);
	return CLI_RUN;
}

int cli_parse(const struct cli_cmd *root, const char *prog, const char *version, int argc, char **argv,
	      struct cli_args *a)
{
	int i = 1;

	memset(a, 0, sizeof(*a));
	snprintf(a->path, sizeof(a->path), "%s", prog);
	a->chain[0] = a->cmd = root;
	a->rest = argv + 1;
	a->nrest = argc > 1 ? argc - 1 : 0;
	while (a->cmd->subs) {
		const struct cli_cmd *c = a->cmd, *s;
		if (i >= argc)
			return cli_error(a, "no command given ('%s --help' lists them)", a->path);
		const char *w = argv[i];
		if (is_help(w)) {
			cli_help(a, stdout);
			return 0;
		}
		if (a->depth == 0 && (!strcmp(w, "--version") || !strcmp(w, "-V"))) {
			printf("%s %s\n", prog, version);
			return 0;
		}
		for (s = c->subs; s->name && strcmp(s->name, w); s++)
			;
		if (a->depth == 0 && !s->name && !strcmp(w, "help")) {
			/* help [--commands | COMMAND...] */
			if (i + 1 < argc && !strcmp(argv[i + 1], "--commands")) {
				print_paths(root->subs, "", 0);
				return 0;
			}
			for (i++; i < argc; i++) {
				for (s = a->cmd->subs; s && s->name && strcmp(s->name, argv[i]); s++)
					;
				if (!s || !s->name)
					return cli_error(a, "no command '%s'", argv[i]);
				push(a, s);
			}
			cli_help(a, stdout);
			return 0;
		}
		if (!s->name) {
			if (option_like(w))
				return cli_error(a, "unknown option %s ('%s --help' lists the commands)", w, a->path);
			return cli_error(a, "unknown command '%s' ('%s --help' lists them)", w, a->path);
		}
		if (a->depth >= CLI_MAX_DEPTH)
			return cli_error(a, "commands nested too deep");
		push(a, s);
		i++;
	}
	if (wants_help(a->cmd, i, argc, argv)) {
		cli_help(a, stdout);
		return 0;
	}
	return parse_leaf(a, i, argc, argv);
}

/* ---- values of the command reached ---------------------------------------------- */

/* A name that is not in the command's table is the program's mistake:
 * it stops here rather than read as "not given". */
const struct cli_val *cli_get(const struct cli_args *a, const char *name)
{
	for (const struct cli_opt *o = a->cmd->opts; o && o->name; o++)
		if (!strcmp(o->name, name))
			return a->vals[o - a->cmd->opts].set ? &a->vals[o - a->cmd->opts] : NULL;
	fprintf(stderr, "%s: internal error: no option %s in this command's table\n", a->path, name);
	abort();
}

bool cli_flag(const struct cli_args *a, const char *name)
{
	return cli_get(a, name) != NULL;
}

const char *cli_str(const struct cli_args *a, const char *name, const char *dflt)
{
	const struct cli_val *v = cli_get(a, name);

	return v ? v->text : dflt;
}

unsigned long long cli_uint(const struct cli_args *a, const char *name, unsigned long long dflt)
{
	const struct cli_val *v = cli_get(a, name);

	return v ? v->u : dflt;
}

double cli_double(const struct cli_args *a, const char *name, double dflt)
{
	const struct cli_val *v = cli_get(a, name);

	return v ? v->d : dflt;
}
