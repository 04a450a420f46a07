/*
 * interpose.c — the libc calls libsoftrnic_shim.so (shim.h) replaces: each
 * rewrites a path under /sys/class/infiniband*, /dev/infiniband into the
 * fake tree (tree.c) and calls the real function, found with
 * dlsym(RTLD_NEXT).  Everything else passes through untouched, so the
 * cost for other paths is one prefix compare.
 *
 * Which calls: glibc's own internal calls do not go through the dynamic
 * symbol table (fopen, opendir, scandir, realpath call glibc-private open
 * and stat functions), so each public entry point a program may use is
 * replaced: open/openat (and the 64-bit and _FORTIFY_SOURCE _2 variants),
 * fopen, stat/lstat/fstatat (and the __xstat family that binaries built
 * before glibc 2.33 call), statx, access/faccessat/euidaccess, opendir,
 * scandir, readlink, realpath, and the xattr reads of ls -l.  A call the list misses just sees no
 * device, as without the shim.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "shim/shim.h"

#define EXPORT __attribute__((visibility("default")))

/* The real function `name`, looked up once (a racing first call looks it
 * up twice, harmlessly). */
#define REAL(type, name, ...)                                                   \
	static type (*real_##name)(__VA_ARGS__);                                \
	if (!real_##name)                                                       \
		*(void **)&real_##name = dlsym(RTLD_NEXT, #name)

/* O_CREAT and O_TMPFILE carry a mode argument. */
static mode_t open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

/* Read-only opens of an attribute the live device answers get its memfd.
 * Opens for writing under /sys/class/infiniband* fail with EACCES, as on
 * the kernel's read-only attributes (even for root, who could otherwise
 * write into the tree's files); the device nodes open read-write. */
static int open_dynamic(const char *path, int flags, bool *handled)
{
	*handled = false;
	if (path == NULL || path[0] != '/')
		return -1;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC))) {
		if (strncmp(path, "/sys/class/infiniband", 21) || !shim_covers(path))
			return -1;
		*handled = true;
		errno = EACCES;
		return -1;
	}
	return shim_open_dynamic(path, handled);
}

/* Every open variant: open(p) is openat(AT_FDCWD, p), and on 64-bit
 * Linux the *64 variants are the same calls (O_LARGEFILE is implied). */
static int open_at(int dirfd, const char *path, int flags, mode_t mode)
{
	char buf[PATH_MAX];
	bool handled;
	int fd;

	REAL(int, openat, int, const char *, int, ...);
	fd = open_dynamic(path, flags, &handled);
	if (handled)
		return fd;
	return real_openat(dirfd, shim_rewrite(path, buf, sizeof(buf)), flags, mode);
}

/* The mode argument, present with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, mode)                  \
	do {                                    \
		va_list ap;                     \
		va_start(ap, flags);            \
		mode = open_mode(flags, ap);    \
		va_end(ap);                     \
	} while (0)

EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	return open_at(AT_FDCWD, path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	return open_at(AT_FDCWD, path, flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	return open_at(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	return open_at(dirfd, path, flags, mode);
}

/* _FORTIFY_SOURCE builds call these when the flags are not constant. */
EXPORT int __open_2(const char *path, int flags)
{
	return open_at(AT_FDCWD, path, flags, 0);
}

EXPORT int __open64_2(const char *path, int flags)
{
	return open_at(AT_FDCWD, path, flags, 0);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return open_at(dirfd, path, flags, 0);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return open_at(dirfd, path, flags, 0);
}

static FILE *fopen_common(FILE *(*real)(const char *, const char *), const char *path, const char *mode)
{
	char buf[PATH_MAX];
	bool handled = false;
	int fd = -1;

	if (!mode || !path || path[0] != '/')
		return real(path, mode);
	if (mode[0] == 'r' && !strchr(mode, '+'))
		fd = shim_open_dynamic(path, &handled);
	else if (!strncmp(path, "/sys/class/infiniband", 21) && shim_covers(path)) {
		errno = EACCES;         /* read-only attributes, as in open() */
		return NULL;
	}
	if (handled) {
		FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;

		if (!f && fd >= 0)
			close(fd);
		return f;
	}
	return real(shim_rewrite(path, buf, sizeof(buf)), mode);
}

EXPORT FILE *fopen(const char *path, const char *mode)
{
	REAL(FILE *, fopen, const char *, const char *);
	return fopen_common(real_fopen, path, mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
	REAL(FILE *, fopen64, const char *, const char *);
	return fopen_common(real_fopen64, path, mode);
}

/* ---- stat family ---------------------------------------------------------------- */

#define PATH_WRAP(ret, name, params, args, ...)                                  \
	EXPORT ret name params                                                   \
	{                                                                        \
		char buf[PATH_MAX];                                              \
		REAL(ret, name, __VA_ARGS__);                                    \
		path = shim_rewrite(path, buf, sizeof(buf));                     \
		return real_##name args;                                         \
	}

PATH_WRAP(int, stat, (const char *path, struct stat *st), (path, st), const char *, struct stat *)
PATH_WRAP(int, stat64, (const char *path, struct stat64 *st), (path, st), const char *, struct stat64 *)
PATH_WRAP(int, lstat, (const char *path, struct stat *st), (path, st), const char *, struct stat *)
PATH_WRAP(int, lstat64, (const char *path, struct stat64 *st), (path, st), const char *, struct stat64 *)
PATH_WRAP(int, fstatat, (int dirfd, const char *path, struct stat *st, int flags), (dirfd, path, st, flags), int,
	  const char *, struct stat *, int)
PATH_WRAP(int, fstatat64, (int dirfd, const char *path, struct stat64 *st, int flags), (dirfd, path, st, flags),
	  int, const char *, struct stat64 *, int)
PATH_WRAP(int, statx, (int dirfd, const char *path, int flags, unsigned mask, struct statx *st),
	  (dirfd, path, flags, mask, st), int, const char *, int, unsigned, struct statx *)

/* The pre-2.33 entry points (struct stat behind a version number). */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);
PATH_WRAP(int, __xstat, (int ver, const char *path, struct stat *st), (ver, path, st), int, const char *,
	  struct stat *)
PATH_WRAP(int, __xstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st), int, const char *,
	  struct stat64 *)
PATH_WRAP(int, __lxstat, (int ver, const char *path, struct stat *st), (ver, path, st), int, const char *,
	  struct stat *)
PATH_WRAP(int, __lxstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st), int, const char *,
	  struct stat64 *)
PATH_WRAP(int, __fxstatat, (int ver, int dirfd, const char *path, struct stat *st, int flags),
	  (ver, dirfd, path, st, flags), int, int, const char *, struct stat *, int)
PATH_WRAP(int, __fxstatat64, (int ver, int dirfd, const char *path, struct stat64 *st, int flags),
	  (ver, dirfd, path, st, flags), int, int, const char *, struct stat64 *, int)

PATH_WRAP(int, access, (const char *path, int mode), (path, mode), const char *, int)
PATH_WRAP(int, euidaccess, (const char *path, int mode), (path, mode), const char *, int)
PATH_WRAP(int, eaccess, (const char *path, int mode), (path, mode), const char *, int)
PATH_WRAP(int, faccessat, (int dirfd, const char *path, int mode, int flags), (dirfd, path, mode, flags), int,
	  const char *, int, int)
PATH_WRAP(ssize_t, readlink, (const char *restrict path, char *restrict out, size_t cap), (path, out, cap),
	  const char *, char *, size_t)
PATH_WRAP(DIR *, opendir, (const char *path), (path), const char *)
PATH_WRAP(int, scandir,
	  (const char *restrict path, struct dirent ***list, int (*filter)(const struct dirent *),
	   int (*compar)(const struct dirent **, const struct dirent **)),
	  (path, list, filter, compar), const char *, struct dirent ***, int (*)(const struct dirent *),
	  int (*)(const struct dirent **, const struct dirent **))
PATH_WRAP(int, scandir64,
	  (const char *restrict path, struct dirent64 ***list, int (*filter)(const struct dirent64 *),
	   int (*compar)(const struct dirent64 **, const struct dirent64 **)),
	  (path, list, filter, compar), const char *, struct dirent64 ***, int (*)(const struct dirent64 *),
	  int (*)(const struct dirent64 **, const struct dirent64 **))

PATH_WRAP(ssize_t, getxattr, (const char *path, const char *name, void *value, size_t size),
	  (path, name, value, size), const char *, const char *, void *, size_t)
PATH_WRAP(ssize_t, lgetxattr, (const char *path, const char *name, void *value, size_t size),
	  (path, name, value, size), const char *, const char *, void *, size_t)
PATH_WRAP(ssize_t, listxattr, (const char *path, char *list, size_t size), (path, list, size), const char *,
	  char *, size_t)
PATH_WRAP(ssize_t, llistxattr, (const char *path, char *list, size_t size), (path, list, size), const char *,
	  char *, size_t)

/* realpath: resolve inside the tree, then give the kernel's name back, so
 * that a program comparing paths sees the ones it asked for. */
EXPORT char *realpath(const char *restrict path, char *restrict resolved)
{
	char buf[PATH_MAX];
	const char *root = NULL, *p;
	char *out;

	REAL(char *, realpath, const char *, char *);
	p = shim_rewrite(path, buf, sizeof(buf));
	if (p != path)
		root = shim_tree_root();
	out = real_realpath(p, resolved);
	if (out && root) {
		size_t n = strlen(root);

		if (!strncmp(out, root, n) && out[n] == '/')
			memmove(out, out + n, strlen(out + n) + 1);
	}
	return out;
}
