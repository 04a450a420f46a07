/*
 * cli_parse.h — the one command-line parser of softrnic's programs
 * (`softrnic`, and softrnic-kv and softrnic-nvmf that `softrnic kv` and
 * `softrnic nvmf` run).
 *
 * A program describes itself as a tree of commands (struct cli_cmd):
 * each has a name, a one-line summary, its positional arguments, a table
 * of options with typed values (struct cli_opt: a flag, a string, a whole
 * number in a range, a size with units and an upper bound, a decimal
 * number in a range, one of a list of words) and sub-commands.
 * cli_parse() walks argv down that tree and
 *   - answers -h/--help at every level on stdout, exit 0, before anything
 *     else is looked at (so `kv get --help` never connects);
 *   - answers --version/-V at the top, and `help [COMMAND...]`, and the
 *     hidden `help --commands` (every command path, one a line: what the
 *     tests walk);
 *   - refuses a bad value with ONE line on stderr, "PATH: --opt VALUE: why",
 *     exit 2, never a usage dump;
 *   - otherwise fills struct cli_args with the command reached, its
 *     options' values and its positional arguments, and returns
 *     CLI_RUN: the caller runs the command (by its id).
 * The tables are plain data, so two programs can share one (the kv and
 * nvmf tables are in both `softrnic` and their own program).
 */
#ifndef SOFTRNIC_TOOLS_CLI_PARSE_H
#define SOFTRNIC_TOOLS_CLI_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cli_type {
	CLI_FLAG,       /* no value */
	CLI_STRING,     /* any text */
	CLI_UINT,       /* a whole number in [min, max] (decimal) */
	CLI_SIZE,       /* bytes: a whole number with k, m, g or t (binary units), in [min, max] */
	CLI_DOUBLE,     /* a decimal number in [dmin, dmax] */
	CLI_CHOICE,     /* one of choices[] (its index is the value) */
};

/* cli_opt.flags */
#define CLI_POW2     1u  /* CLI_UINT/CLI_SIZE: a power of two */
#define CLI_PHYS_MEM 2u  /* CLI_SIZE: at most this machine's memory too */

struct cli_opt {
	const char *name;               /* "--port" (NULL ends a table) */
	char short_name;                /* 'v' for -v, or 0 */
	enum cli_type type;
	const char *arg;                /* the value's placeholder in the help: "P" */
	const char *help;               /* one line */
	unsigned long long min, max;    /* CLI_UINT, CLI_SIZE */
	double dmin, dmax;              /* CLI_DOUBLE */
	const char *what;               /* refusal's noun: "a port" (default: "a whole number" ...) */
	const char *const *choices;     /* CLI_CHOICE: NULL-terminated */
	unsigned flags;
};

#define CLI_ANY 0xffffu                 /* max_args: no limit */

/* cli_cmd.flags */
#define CLI_STOP_AT_ARG 1u  /* options end at the first positional (softrnic run CMD ARGS) */
#define CLI_HIDDEN      2u  /* not listed (still answers --help) */

struct cli_cmd {
	const char *name;               /* NULL ends a table */
	const char *summary;            /* one line */
	const char *args;               /* the positionals' synopsis: "KEY VALUE|-" */
	unsigned min_args, max_args;
	const struct cli_opt *opts;     /* NULL or a table ended by { 0 } */
	const struct cli_cmd *subs;     /* NULL or a table ended by { 0 } */
	const char *details;            /* more help text, printed after the options */
	int id;                         /* the program's name for it */
	unsigned flags;
};

#define CLI_MAX_DEPTH 4
#define CLI_MAX_OPTS 32

struct cli_val {
	bool set;
	const char *text;               /* as given */
	unsigned long long u;           /* CLI_UINT, CLI_SIZE; CLI_CHOICE: the index */
	double d;                       /* CLI_DOUBLE */
};

struct cli_args {
	char path[128];                 /* "softrnic kv serve": the prefix of messages */
	const struct cli_cmd *chain[CLI_MAX_DEPTH + 1];  /* root .. the command reached */
	unsigned depth;                 /* chain[depth] is the command reached */
	const struct cli_cmd *cmd;      /* == chain[depth] */
	struct cli_val vals[CLI_MAX_OPTS];  /* by the index of cmd->opts */
	int argc;                       /* positionals */
	char **argv;                    /* points into the argv given (not NULL-terminated past argc) */
	char **rest;                    /* the words after the program's name, as given */
	int nrest;
};

#define CLI_RUN -1   /* cli_parse: run args->cmd; otherwise the exit status */

/* Walks argv (argv[0] is the program, named `prog` in messages) down the
 * tree from `root`.  CLI_RUN, or an exit status after help (0) or a
 * refusal (2) was printed.  `version` is printed for --version/-V. */
int cli_parse(const struct cli_cmd *root, const char *prog, const char *version, int argc, char **argv,
	      struct cli_args *args);

/* The value of option `name` of the command reached, NULL if not given. */
const struct cli_val *cli_get(const struct cli_args *a, const char *name);
bool cli_flag(const struct cli_args *a, const char *name);
const char *cli_str(const struct cli_args *a, const char *name, const char *dflt);
unsigned long long cli_uint(const struct cli_args *a, const char *name, unsigned long long dflt);
double cli_double(const struct cli_args *a, const char *name, double dflt);

/* Checks `text` against spec (a positional argument described as an
 * option: name "PID", type, range) into *v; false after the one-line
 * refusal "PATH: PID text: why" on stderr. */
bool cli_check(const struct cli_args *a, const struct cli_opt *spec, const char *text, struct cli_val *v);

/* "PATH: <message>" on stderr, one line; returns 2 (the usage exit status). */
int cli_error(const struct cli_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The help of the command reached (a->cmd) on out. */
void cli_help(const struct cli_args *a, FILE *out);

#endif
