/*
 * stats_file.c — publish a device's counters in /dev/shm/softrnic-<pid>
 * and read them back (see stats_file.h).
 *
 * The writer maps the file and overwrites the counters in place; the
 * magic number is written last on creation so a reader never accepts a
 * half-initialised record.  Readers use plain pread (no mapping needed).
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

static void stats_path(char *out, size_t cap, pid_t pid)
{
	snprintf(out, cap, "%s/%s%d", SRT_STATS_DIR, SRT_STATS_PREFIX, (int)pid);
}

int srt_stats_create(struct srt_stats_writer *w, const char *name, const uint8_t gid[16])
{
	pid_t pid = getpid();
	int fd;

	w->map = NULL;
	stats_path(w->path, sizeof(w->path), pid);
	fd = open(w->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	if (ftruncate(fd, sizeof(struct srt_stats_file)) != 0) {
		int e = errno;
		close(fd);
		unlink(w->path);
		return e;
	}
	void *p = mmap(NULL, sizeof(struct srt_stats_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED) {
		unlink(w->path);
		return e;
	}
	w->map = p;
	w->map->version = SRT_STATS_VERSION;
	w->map->pid = (int32_t)pid;
	snprintf(w->map->name, sizeof(w->map->name), "%s", name);
	memcpy(w->map->gid, gid, 16);
	__atomic_store_n(&w->map->magic, SRT_STATS_MAGIC, __ATOMIC_RELEASE);
	return 0;
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

void srt_stats_remove(struct srt_stats_writer *w)
{
	if (!w->map)
		return;
	munmap(w->map, sizeof(*w->map));
	w->map = NULL;
	unlink(w->path);
}

static bool process_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

int srt_stats_read(pid_t pid, struct srt_stats_file *out)
{
	char path[64];
	int fd;

	if (pid <= 0)
		return EINVAL;
	stats_path(path, sizeof(path), pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? ENOENT : errno;
	ssize_t n = pread(fd, out, sizeof(*out), 0);
	close(fd);
	if (!process_alive(pid)) {
		unlink(path);
		return ESRCH;
	}
	if (n != (ssize_t)sizeof(*out) || out->magic != SRT_STATS_MAGIC || out->version != SRT_STATS_VERSION ||
	    out->pid != (int32_t)pid)
		return EINVAL;
	out->name[sizeof(out->name) - 1] = 0;
	return 0;
}

static int compare_pids(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

int srt_stats_foreach(void (*fn)(void *arg, const struct srt_stats_file *s), void *arg)
{
	DIR *dir = opendir(SRT_STATS_DIR);
	pid_t *pids = NULL;
	size_t count = 0, cap = 0;
	struct dirent *de;
	int live = 0;

	if (!dir)
		return 0;
	while ((de = readdir(dir)) != NULL) {
		const char *name = de->d_name;
		size_t plen = strlen(SRT_STATS_PREFIX);
		char *end;

		if (strncmp(name, SRT_STATS_PREFIX, plen))
			continue;
		long pid = strtol(name + plen, &end, 10);
		if (*end || end == name + plen || pid <= 0 || pid > 0x7fffffffL)
			continue;
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			pid_t *np = realloc(pids, ncap * sizeof(*np));
			if (!np)
				break;
			pids = np;
			cap = ncap;
		}
		pids[count++] = (pid_t)pid;
	}
	closedir(dir);

	if (count)
		qsort(pids, count, sizeof(*pids), compare_pids);
	for (size_t i = 0; i < count; i++) {
		struct srt_stats_file s;
		if (srt_stats_read(pids[i], &s) == 0) {
			live++;
			if (fn)
				fn(arg, &s);
		}
	}
	free(pids);
	return live;
}
