/*
 * runtime_dir.c — the per-user directory of softrnic's shared files and
 * the two ways files in it are opened (runtime_dir.h says which directory
 * and why).
 *
 * The threat: another user B of the host makes names we would use before
 * we do — a directory of B's at /dev/shm/softrnic-<our uid>, a symbolic
 * link to a file of root's, a FIFO that blocks whoever opens it — with
 * fs.protected_symlinks, _regular and _fifos off, as in many containers.
 * So the directory is judged through its open descriptor (no race between
 * the check and the use), files are reached relative to it (openat and
 * friends), nothing follows a link or waits on a FIFO, and every file is
 * taken only if it is a regular file of the expected owner.
 *
 * The choice of directory is made once per process: again in a child of
 * fork() (its pid differs) or when the effective uid changed, never
 * because the environment did, so a device's stats file and ring stay in
 * one place for its life.
 */
#include "runtime/runtime_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define DIR_OPEN_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
#define SHM_PREFIX "/dev/shm/softrnic-"

enum dir_source { FROM_ENV, FROM_XDG, FROM_SHM };

/* The choice for this process (chosen_pid) and effective uid. */
static pthread_mutex_t choose_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static pid_t chosen_pid;
static uid_t chosen_euid;
static enum dir_source chosen_source;
static char chosen_path[PATH_MAX];
static pid_t warned_pid;        /* a refusal is said once per process */

/* A fork() while another thread chooses leaves the child's copy of the
 * lock held. */
static void reset_lock_in_child(void)
{
	pthread_mutex_init(&choose_lock, NULL);
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, reset_lock_in_child);
}

/* A directory that only `uid` can change: ours, or (root's scan) its
 * owner's. */
static bool private_to(const struct stat *st, uid_t uid)
{
	return S_ISDIR(st->st_mode) && st->st_uid == uid && !(st->st_mode & 022);
}

/* XDG_RUNTIME_DIR is worth using: an absolute path to a directory (not a
 * link) of ours that no one else can write. */
static bool xdg_usable(const char *xdg, uid_t euid)
{
	struct stat st;
	int fd;
	bool ok;

	if (!xdg || xdg[0] != '/' || strlen(xdg) + sizeof("/softrnic") > sizeof(chosen_path))
		return false;
	fd = open(xdg, DIR_OPEN_FLAGS);
	if (fd < 0)
		return false;
	ok = !fstat(fd, &st) && private_to(&st, euid);
	close(fd);
	return ok;
}

/* Fills chosen_* for this process (lock held). */
static void choose(void)
{
	const char *env = getenv("SOFTRNIC_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	uid_t euid = geteuid();

	if (env && *env) {
		chosen_source = FROM_ENV;
		snprintf(chosen_path, sizeof(chosen_path), "%s", env);
	} else if (xdg_usable(xdg, euid)) {
		chosen_source = FROM_XDG;
		snprintf(chosen_path, sizeof(chosen_path), "%s/softrnic", xdg);
	} else {
		chosen_source = FROM_SHM;
		snprintf(chosen_path, sizeof(chosen_path), SHM_PREFIX "%u", (unsigned)euid);
	}
	chosen_euid = euid;
	chosen_pid = getpid();
}

/* This process's choice, copied out (path and source). */
static enum dir_source chosen(char *path, size_t cap)
{
	enum dir_source src;

	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&choose_lock);
	if (chosen_pid != getpid() || chosen_euid != geteuid())
		choose();
	src = chosen_source;
	snprintf(path, cap, "%s", chosen_path);
	pthread_mutex_unlock(&choose_lock);
	return src;
}

const char *srt_runtime_dir_path(void)
{
	char path[PATH_MAX];

	(void)chosen(path, sizeof(path));
	return chosen_path;
}

/* The one line that says why there are no shared files. */
static void refuse(const char *path, const char *why, const struct stat *st)
{
	char owner[64] = "";

	if (warned_pid == getpid())
		return;
	warned_pid = getpid();
	if (st)
		snprintf(owner, sizeof(owner), " (owner uid %u, we are uid %u)", (unsigned)st->st_uid,
			 (unsigned)geteuid());
	fprintf(stderr, "softrnic: runtime directory %s refused: %s%s; going on without stats file and host-local "
		"ring (set SOFTRNIC_RUNTIME_DIR to a directory of our own)\n", path, why, owner);
}

int srt_runtime_dir_open(bool create)
{
	char path[PATH_MAX];
	enum dir_source src = chosen(path, sizeof(path));
	struct stat st;
	int fd;

	if (path[0] != '/') {
		refuse(path, "SOFTRNIC_RUNTIME_DIR must be an absolute path", NULL);
		errno = EINVAL;
		return -1;
	}
	fd = open(path, DIR_OPEN_FLAGS);
	if (fd < 0 && errno == ENOENT && create) {
		/* Only the last component: a SOFTRNIC_RUNTIME_DIR whose parent
		 * is missing is a mistake to report, not to paper over. */
		if (mkdir(path, 0700) == 0 || errno == EEXIST)
			fd = open(path, DIR_OPEN_FLAGS);
	}
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT && !create)
			return -1;
		if (e == ELOOP || e == ENOTDIR) {
			/* (a link to a directory opened O_DIRECTORY|O_NOFOLLOW
			 * is ENOTDIR) */
			bool have = !lstat(path, &st), link = have && S_ISLNK(st.st_mode);
			refuse(path, link ? "a symbolic link" : "not a directory", have ? &st : NULL);
			e = link ? ELOOP : ENOTDIR;
		} else {
			refuse(path, strerror(e), NULL);
		}
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) || !S_ISDIR(st.st_mode)) {
		refuse(path, "not a directory", NULL);
		close(fd);
		errno = ENOTDIR;
		return -1;
	}
	if (st.st_uid != geteuid()) {
		refuse(path, "owned by another user", &st);
		close(fd);
		errno = EPERM;
		return -1;
	}
	/* Ours but open to others: a default directory (named for softrnic,
	 * made by softrnic) is closed again; the user's own choice is not
	 * changed behind their back, only refused if others may write. */
	if ((st.st_mode & 077) && src != FROM_ENV && fchmod(fd, 0700) == 0)
		st.st_mode &= ~(mode_t)077;
	if (st.st_mode & 022) {
		refuse(path, "writable by group or others", &st);
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

bool srt_runtime_dir_on_tmpfs(int dirfd)
{
	struct statfs sf;

	return !fstatfs(dirfd, &sf) && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

/* ---- root: the other users' directories ------------------------------------ */

/* A decimal uid, the whole of s. */
static bool parse_uid(const char *s, uid_t *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end || errno || v > 0xfffffffeul)
		return false;
	*out = (uid_t)v;
	return true;
}

/* name in dirfd as a directory private to uid: its descriptor, or -1. */
static int open_private_at(int dirfd, const char *name, uid_t uid)
{
	struct stat st;
	int fd = openat(dirfd, name, DIR_OPEN_FLAGS);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !private_to(&st, uid)) {
		close(fd);
		return -1;
	}
	return fd;
}

void srt_runtime_dirs_of_others(void (*fn)(void *arg, int dirfd, uid_t owner), void *arg)
{
	struct dirent *de;
	DIR *d;
	uid_t uid;

	if (geteuid() != 0)
		return;
	/* /run/user/<uid>/softrnic: systemd's per-user tmpfs, the user's own
	 * directory (0700) and softrnic's in it. */
	int run = open("/run/user", DIR_OPEN_FLAGS);
	if (run >= 0 && (d = fdopendir(run)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (!parse_uid(de->d_name, &uid))
				continue;
			int home = open_private_at(dirfd(d), de->d_name, uid);
			if (home < 0)
				continue;
			int fd = open_private_at(home, "softrnic", uid);
			close(home);
			if (fd >= 0) {
				fn(arg, fd, uid);
				close(fd);
			}
		}
		closedir(d);
	} else if (run >= 0) {
		close(run);
	}
	/* /dev/shm/softrnic-<uid> (a regular file of that name is a stats
	 * file of an older softrnic: not a directory, skipped). */
	int shm = open("/dev/shm", DIR_OPEN_FLAGS);
	if (shm >= 0 && (d = fdopendir(shm)) != NULL) {
		size_t n = strlen("softrnic-");
		while ((de = readdir(d)) != NULL) {
			if (strncmp(de->d_name, "softrnic-", n) || !parse_uid(de->d_name + n, &uid))
				continue;
			int fd = open_private_at(dirfd(d), de->d_name, uid);
			if (fd >= 0) {
				fn(arg, fd, uid);
				close(fd);
			}
		}
		closedir(d);
	} else if (shm >= 0) {
		close(shm);
	}
}

/* ---- files ------------------------------------------------------------------ */

int srt_open_owned(int dirfd, const char *name, int flags, uid_t owner)
{
	struct stat st = { 0 };
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != owner) {
		int e = S_ISREG(st.st_mode) ? EPERM : EINVAL;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int srt_create_private(int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0 && errno == EEXIST) {
		int old = srt_open_owned(dirfd, name, O_RDONLY, geteuid());
		if (old < 0) {
			errno = EEXIST;
			return -1;
		}
		close(old);
		if (unlinkat(dirfd, name, 0) && errno != ENOENT)
			return -1;
		fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	/* 0600 whatever the umask: a umask of 0277 would leave a file its
	 * other processes (senders to a ring) cannot open for writing. */
	if (fd >= 0)
		(void)fchmod(fd, 0600);
	return fd;
}

/* ---- processes ---------------------------------------------------------------- */

bool srt_process_runs_as(pid_t pid, uid_t uid)
{
	char path[64], buf[4096];
	ssize_t n, got = 0;
	int fd;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* No /proc (a sandbox): whether we may signal it is the best
		 * there is. */
		if (errno == ENOENT && access("/proc/self/status", F_OK) != 0)
			return kill(pid, 0) == 0;
		return false;
	}
	while (got < (ssize_t)sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;

	/* A thread id is not a process; a zombie has ended; the effective
	 * uid is the one files are made with. */
	const char *tgid = strstr(buf, "\nTgid:");
	const char *state = strstr(buf, "\nState:");
	const char *ids = strstr(buf, "\nUid:");
	unsigned long t, real, eff;
	char st;
	if (!tgid || !state || !ids || sscanf(tgid, "\nTgid: %lu", &t) != 1 || t != (unsigned long)pid ||
	    sscanf(state, "\nState: %c", &st) != 1 || st == 'Z' || st == 'X' ||
	    sscanf(ids, "\nUid: %lu %lu", &real, &eff) != 2)
		return false;
	return eff == (unsigned long)uid;
}
