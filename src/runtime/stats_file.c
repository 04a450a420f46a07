/*
 * stats_file.c — publish a device's counters in softrnic-<pid> of the
 * user's runtime directory and read them back (see stats_file.h).
 *
 * The writer creates the file new (srt_create_private: O_EXCL, 0600),
 * maps it and overwrites the counters in place; the magic number is
 * written last on creation so a reader never accepts a half-initialised
 * record.  Readers use plain pread (no mapping needed) on files opened by
 * srt_open_owned: a FIFO or a link at a stats name is skipped, never
 * waited on or followed.
 */
#include "runtime/stats_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime_dir.h"

static void stats_name(char *out, size_t cap, pid_t pid)
{
	snprintf(out, cap, "%s%d", SRT_STATS_PREFIX, (int)pid);
}

/* The pid a stats file's name holds, or 0. */
static pid_t pid_of_name(const char *name)
{
	size_t plen = strlen(SRT_STATS_PREFIX);
	char *end;

	if (strncmp(name, SRT_STATS_PREFIX, plen) || name[plen] < '0' || name[plen] > '9')
		return 0;
	long pid = strtol(name + plen, &end, 10);
	if (*end || pid <= 0 || pid > 0x7fffffffL)
		return 0;
	return (pid_t)pid;
}

/* ---- writer -------------------------------------------------------------------- */

static void *map_file(int fd)
{
	if (ftruncate(fd, sizeof(struct srt_stats_file)) != 0)
		return MAP_FAILED;
	return mmap(NULL, sizeof(struct srt_stats_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}

int srt_stats_create(struct srt_stats_writer *w, int dirfd, const char *name, const uint8_t gid[16])
{
	pid_t pid = getpid();
	void *p = MAP_FAILED;
	struct stat st;
	int e = 0;

	w->map = NULL;
	w->dirfd = -1;
	w->name[0] = 0;
	if (dirfd >= 0) {
		stats_name(w->name, sizeof(w->name), pid);
		int fd = srt_create_private(dirfd, w->name, O_RDWR);
		if (fd < 0) {
			e = errno;
		} else {
			p = fstat(fd, &st) ? MAP_FAILED : map_file(fd);
			e = errno;
			close(fd);
			if (p == MAP_FAILED)
				unlinkat(dirfd, w->name, 0);
		}
		if (p == MAP_FAILED) {
			w->name[0] = 0;
		} else {
			w->dirfd = dirfd;
			w->ino = st.st_ino;
			e = 0;
		}
	}
	/* No file: the counters in private memory, for SOFTRNIC_STATS_AT_EXIT. */
	if (p == MAP_FAILED)
		p = mmap(NULL, sizeof(struct srt_stats_file), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	w->map = p;
	w->map->version = SRT_STATS_VERSION;
	w->map->pid = (int32_t)pid;
	snprintf(w->map->name, sizeof(w->map->name), "%s", name);
	memcpy(w->map->gid, gid, 16);
	__atomic_store_n(&w->map->magic, SRT_STATS_MAGIC, __ATOMIC_RELEASE);
	return e;
}

void srt_stats_publish(struct srt_stats_writer *w, const struct rnic_counters *c,
		       const struct srt_named_counter *agent, size_t n_agent, const struct rnic_qp_info *qps,
		       size_t n_qp, size_t qp_total, const struct srt_runtime_counters *rt, uint64_t now_ns)
{
	if (!w->map)
		return;
	w->map->counters = *c;
	w->map->runtime = *rt;
	if (n_agent > SRT_AGENT_COUNTERS)
		n_agent = SRT_AGENT_COUNTERS;
	memcpy(w->map->agent, agent, n_agent * sizeof(*agent));
	w->map->n_agent = (uint32_t)n_agent;
	if (n_qp > SRT_STATS_QPS)
		n_qp = SRT_STATS_QPS;
	memcpy(w->map->qps, qps, n_qp * sizeof(*qps));
	w->map->n_qp = (uint32_t)n_qp;
	w->map->qp_total = (uint32_t)qp_total;
	__atomic_store_n(&w->map->updated_ns, now_ns, __ATOMIC_RELEASE);
}

void srt_stats_unlink(struct srt_stats_writer *w)
{
	struct stat st;

	if (w->dirfd < 0 || !w->name[0])
		return;
	/* Only the file we made. */
	if (!fstatat(w->dirfd, w->name, &st, AT_SYMLINK_NOFOLLOW) && st.st_ino == w->ino)
		unlinkat(w->dirfd, w->name, 0);
	w->name[0] = 0;
}

void srt_stats_remove(struct srt_stats_writer *w)
{
	if (!w->map)
		return;
	srt_stats_unlink(w);
	munmap(w->map, sizeof(*w->map));
	w->map = NULL;
}

/* ---- the files of a directory ------------------------------------------------------ */

/* Removes the stale file `name` (opened as fd) of dirfd, if it is still
 * the one at that name. */
static void remove_stale(int dirfd, const char *name, int fd)
{
	struct stat open_st, now_st;

	if (!fstat(fd, &open_st) && !fstatat(dirfd, name, &now_st, AT_SYMLINK_NOFOLLOW) &&
	    open_st.st_ino == now_st.st_ino && open_st.st_dev == now_st.st_dev)
		unlinkat(dirfd, name, 0);
}

/* The pids of the stats files in dirfd, appended to *pids (a growing
 * array of *count, room *cap).  -1 if out of memory. */
static int list_pids(int dirfd, pid_t **pids, size_t *count, size_t *cap)
{
	/* A descriptor of its own: readdir moves a file offset that other
	 * users of dirfd share. */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int rc = 0;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(dir)) != NULL) {
		pid_t pid = pid_of_name(de->d_name);

		if (!pid)
			continue;
		if (*count == *cap) {
			size_t ncap = *cap ? *cap * 2 : 16;
			pid_t *np = realloc(*pids, ncap * sizeof(*np));
			if (!np) {
				rc = -1;
				break;
			}
			*pids = np;
			*cap = ncap;
		}
		(*pids)[(*count)++] = pid;
	}
	closedir(dir);
	return rc;
}

void srt_stats_reclaim(int dirfd)
{
	pid_t *pids = NULL;
	size_t count = 0, cap = 0;
	uid_t me = geteuid();

	if (dirfd < 0)
		return;
	(void)list_pids(dirfd, &pids, &count, &cap);
	for (size_t i = 0; i < count; i++) {
		char name[32];
		int fd;

		if (srt_process_runs_as(pids[i], me))
			continue;
		stats_name(name, sizeof(name), pids[i]);
		fd = srt_open_owned(dirfd, name, O_RDONLY, me);
		if (fd >= 0) {
			remove_stale(dirfd, name, fd);
			close(fd);
		}
	}
	free(pids);
}

/* ---- reader ------------------------------------------------------------------------ */

/* Reads softrnic-<pid> of dirfd, a directory of `owner`'s.  may_remove:
 * the directory is ours, and a stale file goes. */
static int read_in(int dirfd, uid_t owner, bool may_remove, pid_t pid, struct srt_stats_file *out)
{
	char name[32];
	int fd;

	stats_name(name, sizeof(name), pid);
	fd = srt_open_owned(dirfd, name, O_RDONLY, owner);
	if (fd < 0)
		return errno == ENOENT ? ENOENT : EINVAL;
	ssize_t n = pread(fd, out, sizeof(*out), 0);
	if (!srt_process_runs_as(pid, owner)) {
		if (may_remove)
			remove_stale(dirfd, name, fd);
		close(fd);
		return ESRCH;
	}
	close(fd);
	if (n != (ssize_t)sizeof(*out) || out->magic != SRT_STATS_MAGIC || out->version != SRT_STATS_VERSION ||
	    out->pid != (int32_t)pid)
		return EINVAL;
	out->name[sizeof(out->name) - 1] = 0;
	return 0;
}

/* The directories a reader looks in: its own, and for root the other
 * users' found at the default places (each once). */
struct stats_dir {
	int fd;
	uid_t owner;
	bool own;
	dev_t dev;
	ino_t ino;
};
struct stats_dirs {
	struct stats_dir d[64];
	unsigned n;
};

static void add_dir(struct stats_dirs *ds, int fd, uid_t owner, bool own)
{
	struct stat st;

	if (ds->n == sizeof(ds->d) / sizeof(ds->d[0]) || fstat(fd, &st)) {
		close(fd);
		return;
	}
	for (unsigned i = 0; i < ds->n; i++) {
		if (ds->d[i].dev == st.st_dev && ds->d[i].ino == st.st_ino) {
			close(fd);
			return;
		}
	}
	ds->d[ds->n++] = (struct stats_dir){ fd, owner, own, st.st_dev, st.st_ino };
}

static void add_other(void *arg, int dirfd, uid_t owner)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);

	if (fd >= 0)
		add_dir(arg, fd, owner, false);
}

/* Our own directory, and for root (others) the other users'. */
static void open_dirs(struct stats_dirs *ds, bool others)
{
	int own = srt_runtime_dir_open(false);

	ds->n = 0;
	if (own >= 0)
		add_dir(ds, own, geteuid(), true);
	if (others && geteuid() == 0)
		srt_runtime_dirs_of_others(add_other, ds);
}

static void close_dirs(struct stats_dirs *ds)
{
	for (unsigned i = 0; i < ds->n; i++)
		close(ds->d[i].fd);
	ds->n = 0;
}

int srt_stats_read(pid_t pid, struct srt_stats_file *out)
{
	struct stats_dirs ds;
	uid_t me = geteuid();
	int e = ENOENT;

	if (pid <= 0)
		return EINVAL;
	/* Our own directory first: the other users' only when it has no
	 * such file (root; a test polls its own counters). */
	for (int pass = 0; pass < 2 && e == ENOENT; pass++) {
		if (pass && me != 0)
			break;
		open_dirs(&ds, pass == 1);
		for (unsigned i = 0; i < ds.n && e == ENOENT; i++)
			if (!pass || !ds.d[i].own)      /* (read in the first pass) */
				e = read_in(ds.d[i].fd, ds.d[i].owner, ds.d[i].own, pid, out);
		close_dirs(&ds);
	}
	if (e != ENOENT)
		return e;
	/* No file: whose process is it? */
	if (srt_process_runs_as(pid, me))
		return ENOENT;
	if (kill(pid, 0) == 0 || errno == EPERM)
		return me == 0 ? ENOENT : EACCES;
	return ESRCH;
}

struct found {
	pid_t pid;
	unsigned dir;
};

static int compare_found(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->dir > y->dir) - (x->dir < y->dir);
}

int srt_stats_foreach(void (*fn)(void *arg, const struct srt_stats_file *s), void *arg)
{
	struct stats_dirs ds;
	struct found *all = NULL;
	size_t n_all = 0;
	int live = 0;

	open_dirs(&ds, true);
	for (unsigned i = 0; i < ds.n; i++) {
		pid_t *pids = NULL;
		size_t count = 0, cap = 0;

		(void)list_pids(ds.d[i].fd, &pids, &count, &cap);
		struct found *grown = count ? realloc(all, (n_all + count) * sizeof(*all)) : all;
		if (grown) {
			all = grown;
			for (size_t k = 0; k < count; k++)
				all[n_all++] = (struct found){ pids[k], i };
		}
		free(pids);
	}
	if (n_all)
		qsort(all, n_all, sizeof(*all), compare_found);
	pid_t last = 0;
	for (size_t i = 0; i < n_all; i++) {
		const struct stats_dir *d = &ds.d[all[i].dir];
		struct srt_stats_file s;

		if (all[i].pid == last)         /* one device per process */
			continue;
		if (read_in(d->fd, d->owner, d->own, all[i].pid, &s) == 0) {
			last = all[i].pid;
			live++;
			if (fn)
				fn(arg, &s);
		}
	}
	free(all);
	close_dirs(&ds);
	return live;
}
