/*
 * test_runtime_dir.c — the runtime directory (runtime/runtime_dir.h) and
 * the files a device keeps in it:
 *
 *  - which directory: SOFTRNIC_RUNTIME_DIR (made 0700 when missing),
 *    $XDG_RUNTIME_DIR/softrnic when XDG_RUNTIME_DIR is ours, else
 *    /dev/shm/softrnic-<euid>; chosen once per process (a later setenv
 *    changes nothing) and again in a child of fork();
 *  - refusals, each one line on stderr, once per process, naming the
 *    path (and the owner found, and SOFTRNIC_RUNTIME_DIR): a relative
 *    path, a link, a directory others may write (left as it is), and as
 *    root a directory of another user — the device still opens, over
 *    UDP, and writes nothing there; a default directory of ours that is
 *    too open is closed to 0700;
 *  - srt_open_owned and srt_create_private: a FIFO is never waited on, a
 *    link never followed (its target keeps its bytes), another user's
 *    file never taken, and a leftover file of ours is replaced by a new
 *    0600 one whatever the umask;
 *  - a device whose stats name and ring name (a fixed SOFTRNIC_ADDR)
 *    hold a FIFO or a link, among FIFOs and links at the names the
 *    reclaim pass and the readers scan: it opens within seconds, publishes
 *    no file there, leaves the plants and the links' targets alone, and
 *    srt_stats_foreach finishes;
 *  - exit without close: a process that exits with its device open
 *    leaves no stats file and no ring, and prints SOFTRNIC_STATS_AT_EXIT;
 *    a child of fork() that exits leaves its parent's files alone; the
 *    files of a SIGKILLed process stay until the next device opens.
 *
 * Every case runs in a child process (the choice of directory is per
 * process) under a scratch directory of its own in /dev/shm.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_util.h"
#include "runtime/runtime_dir.h"
#include "runtime/stats_file.h"

#define NOBODY 65534

static char scratch[] = "/dev/shm/test_runtime_dir.XXXXXX";
static bool root;

/* Runs case_fn in a child with stderr into a file; returns the child's
 * exit status (a failed CHECK exits 1) and its stderr in err. */
static int in_child(void (*case_fn)(void), char *err, size_t cap)
{
	char log[4096];
	snprintf(log, sizeof(log), "%s/stderr.log", scratch);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(3);
		alarm(20);              /* a hang is a failure, not a stuck test */
		case_fn();
		exit(0);
	}
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	int fd = open(log, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, err, cap - 1) : -1;
	err[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	unlink(log);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static void expect_case(const char *name, void (*case_fn)(void), char *err, size_t cap)
{
	int rc = in_child(case_fn, err, cap);
	REQUIRE(rc == 0, "case %s: exit %d; its stderr:\n%s", name, rc, err);
	printf("runtime_dir: %s: ok\n", name);
}

static void path_in(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", scratch, name);
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* ---- which directory ------------------------------------------------------ */

static void case_env_made(void)
{
	char dir[4096], other[4096];
	struct stat st;

	path_in(dir, sizeof(dir), "env-made");
	setenv("SOFTRNIC_RUNTIME_DIR", dir, 1);
	umask(0);
	int fd = srt_runtime_dir_open(false);
	REQUIRE(fd < 0 && errno == ENOENT, "a reader made the directory");
	fd = srt_runtime_dir_open(true);
	REQUIRE(fd >= 0, "open %s: %s", dir, strerror(errno));
	REQUIRE(!strcmp(srt_runtime_dir_path(), dir), "path %s", srt_runtime_dir_path());
	REQUIRE(!stat(dir, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700, "mode %o", st.st_mode & 0777);
	close(fd);
	/* Chosen once per process ... */
	path_in(other, sizeof(other), "env-other");
	setenv("SOFTRNIC_RUNTIME_DIR", other, 1);
	REQUIRE(!strcmp(srt_runtime_dir_path(), dir), "the choice moved to %s", srt_runtime_dir_path());
	/* ... and again in a child of fork(). */
	pid_t child = fork();
	if (child == 0)
		_exit(strcmp(srt_runtime_dir_path(), other) ? 1 : 0);
	int status;
	REQUIRE(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a child of fork() kept its parent's choice");
}

static void case_relative(void)
{
	setenv("SOFTRNIC_RUNTIME_DIR", "relative/dir", 1);
	REQUIRE(srt_runtime_dir_open(true) < 0, "a relative SOFTRNIC_RUNTIME_DIR was taken");
	REQUIRE(access("relative", F_OK) != 0, "a relative directory was made");
}

static void case_link(void)
{
	char dir[4096], link[4096];

	path_in(dir, sizeof(dir), "link-target");
	path_in(link, sizeof(link), "link");
	REQUIRE(!mkdir(dir, 0700) && !symlink(dir, link), "setup");
	setenv("SOFTRNIC_RUNTIME_DIR", link, 1);
	REQUIRE(srt_runtime_dir_open(true) < 0 && errno == ELOOP, "a link was taken as the directory");
	REQUIRE(srt_runtime_dir_open(true) < 0, "a link was taken the second time");
}

static void case_too_open(void)
{
	char dir[4096];
	struct stat st;

	path_in(dir, sizeof(dir), "too-open");
	REQUIRE(!mkdir(dir, 0700) && !chmod(dir, 0777), "setup");
	setenv("SOFTRNIC_RUNTIME_DIR", dir, 1);
	REQUIRE(srt_runtime_dir_open(true) < 0, "a directory others may write was taken");
	REQUIRE(!stat(dir, &st) && (st.st_mode & 0777) == 0777, "the user's own directory was changed");
}

/* A default directory of ours that is too open is closed; XDG's choice. */
static void case_xdg(void)
{
	char xdg[2048], dir[4096];
	struct stat st;

	path_in(xdg, sizeof(xdg), "xdg");
	snprintf(dir, sizeof(dir), "%s/softrnic", xdg);
	REQUIRE(!mkdir(xdg, 0700) && !mkdir(dir, 0700) && !chmod(dir, 0755), "setup");
	unsetenv("SOFTRNIC_RUNTIME_DIR");
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	int fd = srt_runtime_dir_open(true);
	REQUIRE(fd >= 0 && !strcmp(srt_runtime_dir_path(), dir), "XDG: %s", srt_runtime_dir_path());
	REQUIRE(!stat(dir, &st) && (st.st_mode & 0777) == 0700, "a default directory left %o", st.st_mode & 0777);
	close(fd);
}

/* XDG_RUNTIME_DIR of someone else, or a link: /dev/shm/softrnic-<euid>. */
static void case_xdg_not_ours(void)
{
	char xdg[4096], want[64];

	path_in(xdg, sizeof(xdg), root ? "xdg-nobody" : "xdg-link");
	if (root)
		REQUIRE(!mkdir(xdg, 0700) && !chown(xdg, NOBODY, NOBODY), "setup");
	else
		REQUIRE(!symlink(scratch, xdg), "setup");
	unsetenv("SOFTRNIC_RUNTIME_DIR");
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	snprintf(want, sizeof(want), "/dev/shm/softrnic-%u", (unsigned)geteuid());
	REQUIRE(!strcmp(srt_runtime_dir_path(), want), "path %s, not %s", srt_runtime_dir_path(), want);
}

/* Root: a directory of another user's is refused, and the device works
 * without writing into it. */
static void case_squatted(void)
{
	char dir[4096];

	path_in(dir, sizeof(dir), "squatted");
	REQUIRE(!mkdir(dir, 0700) && !chown(dir, NOBODY, NOBODY), "setup");
	setenv("SOFTRNIC_RUNTIME_DIR", dir, 1);
	setenv("SOFTRNIC_STATS_AT_EXIT", "1", 1);
	for (int i = 0; i < 2; i++) {
		struct srt_device *dev = srt_open();
		REQUIRE(dev, "the device did not open beside a squatted directory");
		srt_close(dev);
	}
	REQUIRE(rmdir(dir) == 0, "something was written into the squatted directory");
}

/* ---- the two ways to open a file ------------------------------------------------ */

static void case_helpers(void)
{
	char here[2048], target[4096];
	struct stat st;

	path_in(here, sizeof(here), "helpers");
	REQUIRE(!mkdir(here, 0700), "mkdir %s", here);
	int dir = open(here, O_RDONLY | O_DIRECTORY);
	REQUIRE(dir >= 0, "open %s", here);
	snprintf(target, sizeof(target), "%s/precious", here);
	int t = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(t >= 0 && write(t, "precious", 8) == 8, "target");
	close(t);
	REQUIRE(!mkfifoat(dir, "fifo", 0600) && !symlinkat(target, dir, "link") && !mkdirat(dir, "subdir", 0700),
	      "plants");

	/* A FIFO is not waited on (alarm(20) would end a hang), a link not
	 * followed, a directory not taken. */
	REQUIRE(srt_open_owned(dir, "fifo", O_RDONLY, geteuid()) < 0 && errno == EINVAL, "FIFO read");
	REQUIRE(srt_open_owned(dir, "fifo", O_RDWR, geteuid()) < 0 && errno == EINVAL, "FIFO read-write");
	REQUIRE(srt_open_owned(dir, "link", O_RDWR, geteuid()) < 0 && errno == ELOOP, "link");
	REQUIRE(srt_open_owned(dir, "subdir", O_RDONLY, geteuid()) < 0, "directory");
	REQUIRE(srt_open_owned(dir, "missing", O_RDONLY, geteuid()) < 0 && errno == ENOENT, "missing");
	int fd = srt_open_owned(dir, "precious", O_RDONLY, geteuid());
	REQUIRE(fd >= 0, "a regular file of ours: %s", strerror(errno));
	close(fd);
	if (root) {
		REQUIRE(!chown(target, NOBODY, NOBODY), "chown");
		REQUIRE(srt_open_owned(dir, "precious", O_RDONLY, 0) < 0 && errno == EPERM, "another user's file");
		REQUIRE(srt_create_private(dir, "precious", O_RDWR) < 0 && errno == EEXIST, "another user's file replaced");
		REQUIRE(!chown(target, 0, 0), "chown back");
	}

	/* Creation never goes through what is there unless it is a file of
	 * ours. */
	REQUIRE(srt_create_private(dir, "fifo", O_RDWR) < 0 && errno == EEXIST, "created over a FIFO");
	REQUIRE(srt_create_private(dir, "link", O_RDWR) < 0 && errno == EEXIST, "created over a link");
	REQUIRE(!lstat(target, &st) && st.st_size == 8 && (st.st_mode & 0777) == 0644, "the link's target changed");
	REQUIRE(!fstatat(dir, "link", &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode), "the link was removed");
	umask(0277);
	fd = srt_create_private(dir, "precious", O_RDWR);
	REQUIRE(fd >= 0, "a leftover file of ours not replaced: %s", strerror(errno));
	REQUIRE(!fstat(fd, &st) && st.st_size == 0 && (st.st_mode & 0777) == 0600, "new file: size %lld mode %o",
	      (long long)st.st_size, st.st_mode & 0777);
	close(fd);
	fd = srt_create_private(dir, "fresh", O_RDWR);
	REQUIRE(fd >= 0, "a new file");
	close(fd);
	REQUIRE(srt_process_runs_as(getpid(), geteuid()) && !srt_process_runs_as(getpid(), geteuid() + 1),
	      "srt_process_runs_as of ourselves");
	unlinkat(dir, "fifo", 0);
	unlinkat(dir, "link", 0);
	unlinkat(dir, "precious", 0);
	unlinkat(dir, "fresh", 0);
	unlinkat(dir, "subdir", AT_REMOVEDIR);
	close(dir);
	REQUIRE(!rmdir(here), "rmdir %s", here);
}

/* ---- a device among FIFOs and links ------------------------------------------------ */

#define PLANT_ADDR "127.0.0.201"

/* The ring name of PLANT_ADDR, as local_path.h makes it. */
static void ring_name_of(char *out, size_t cap)
{
	struct stat st;
	REQUIRE(!stat("/proc/self/ns/net", &st), "netns");
	snprintf(out, cap, "softrnic-local-%u-%lx-%08x-0", (unsigned)getuid(), (unsigned long)st.st_ino,
		 0x7f0000c9u);
}

/* srt_stats_foreach: *(bool *)arg set if our process is listed. */
static void note_if_ours(void *arg, const struct srt_stats_file *s)
{
	if (s->pid == getpid())
		*(bool *)arg = true;
}

/* A child that opens its device once told to, while the parent has
 * planted `stats_plant` at its stats name and `ring_plant` at its ring's
 * (each "fifo" or "link"). */
static void device_among_plants(const char *stats_plant, const char *ring_plant)
{
	char dir[4096], target[4096], name[256], ring[256];
	int go[2], dirfd;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/plants", scratch);
	REQUIRE(!mkdir(dir, 0700), "mkdir %s", dir);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	path_in(target, sizeof(target), "precious");
	int t = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(t >= 0 && write(t, "precious", 8) == 8, "target");
	close(t);
	ring_name_of(ring, sizeof(ring));
	REQUIRE(pipe(go) == 0, "pipe");
	setenv("SOFTRNIC_RUNTIME_DIR", dir, 1);
	setenv("SOFTRNIC_ADDR", PLANT_ADDR, 1);
	setenv("SOFTRNIC_SHARE", "0", 1);
	unsetenv("SOFTRNIC_LOCAL");
	pid_t child = fork();
	REQUIRE(child >= 0, "fork");
	if (child == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		struct srt_device *dev = srt_open();
		REQUIRE(dev, "the device did not open among the plants");
		struct srt_stats_file s;
		REQUIRE(srt_stats_read(getpid(), &s) != 0, "a stats file was published through the plant");
		bool listed = false;
		(void)srt_stats_foreach(note_if_ours, &listed);        /* (root also lists others' devices) */
		REQUIRE(!listed, "our device listed through the plants");
		srt_close(dev);
		_exit(0);
	}
	close(go[0]);
	/* At the child's stats name and its ring's; at names the reclaim
	 * pass and the readers look at (a dead pid's stats, a ring, the
	 * aside name of a dead ring). */
	char other_ring[64], other_ring2[64], aside[64];
	snprintf(name, sizeof(name), "softrnic-%d", (int)child);
	snprintf(other_ring, sizeof(other_ring), "softrnic-local-%u-x", (unsigned)getuid());
	snprintf(other_ring2, sizeof(other_ring2), "softrnic-local-%u-y", (unsigned)getuid());
	snprintf(aside, sizeof(aside), "softrnic-gc-%u-1", (unsigned)getuid());
	const char *names[] = { name, ring, "softrnic-999999", other_ring, other_ring2, aside };
	const char *kinds[] = { stats_plant, ring_plant, "fifo", "fifo", "link", "fifo" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(kinds[i], "fifo"))
			REQUIRE(!mkfifoat(dirfd, names[i], 0600), "mkfifo %s", names[i]);
		else
			REQUIRE(!symlinkat(target, dirfd, names[i]), "symlink %s", names[i]);
	}
	REQUIRE(write(go[1], "g", 1) == 1, "go");
	close(go[1]);
	int status;
	REQUIRE(waitpid(child, &status, 0) == child, "waitpid");
	REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the device's child: status %d", status);
	/* Everything planted is still there, and the target unchanged. */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		REQUIRE(!fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) &&
		      (!strcmp(kinds[i], "fifo") ? S_ISFIFO(st.st_mode) : S_ISLNK(st.st_mode)), "%s replaced", names[i]);
		unlinkat(dirfd, names[i], 0);
	}
	REQUIRE(!stat(target, &st) && st.st_size == 8, "the links' target was written");
	unlink(target);
	close(dirfd);
	REQUIRE(rmdir(dir) == 0, "the device left a file among the plants: %s", strerror(errno));
}

static void case_plants_fifo(void) { device_among_plants("fifo", "link"); }
static void case_plants_link(void) { device_among_plants("link", "fifo"); }

/* ---- exit without close ------------------------------------------------------------- */

/* Entries of dir whose name starts with prefix. */
static int entries(const char *dir, const char *prefix)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "ls -A %s | grep -c '^%s' > %s/count", dir, prefix, scratch);
	(void)!system(cmd);
	snprintf(cmd, sizeof(cmd), "%s/count", scratch);
	FILE *f = fopen(cmd, "r");
	int n = -1;
	REQUIRE(f && fscanf(f, "%d", &n) == 1, "count");
	fclose(f);
	unlink(cmd);
	return n;
}

static void case_exit_without_close(void)
{
	char dir[4096], err[8192];
	int status;

	path_in(dir, sizeof(dir), "exit");
	setenv("SOFTRNIC_RUNTIME_DIR", dir, 1);
	setenv("SOFTRNIC_STATS_AT_EXIT", "1", 1);
	setenv("SOFTRNIC_ADDR", PLANT_ADDR, 1);
	setenv("SOFTRNIC_SHARE", "0", 1);
	unsetenv("SOFTRNIC_LOCAL");

	/* A child that opens its device, forks a grandchild that exits,
	 * and exits itself without closing the device. */
	char log[4096];
	path_in(log, sizeof(log), "exit.log");
	pid_t child = fork();
	if (child == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 2);
		struct srt_device *dev = srt_open();
		REQUIRE(dev, "open");
		REQUIRE(entries(dir, "softrnic-") == 2, "stats file and ring");
		pid_t grandchild = fork();
		if (grandchild == 0)
			exit(0);        /* the parent's device: not its to clean */
		REQUIRE(waitpid(grandchild, NULL, 0) == grandchild, "waitpid");
		REQUIRE(entries(dir, "softrnic-") == 2, "a child of fork() removed its parent's files");
		exit(0);
	}
	REQUIRE(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child");
	REQUIRE(entries(dir, "softrnic-") == 0, "an exit without close left %d files", entries(dir, "softrnic-"));
	int fd = open(log, O_RDONLY);
	ssize_t n = read(fd, err, sizeof(err) - 1);
	err[n > 0 ? n : 0] = 0;
	close(fd);
	char want[64];
	snprintf(want, sizeof(want), "(pid %d) counters:", (int)child);
	REQUIRE(count_lines(err, want) == 1 && count_lines(err, "softrnic: progress:") == 1,
	      "SOFTRNIC_STATS_AT_EXIT at exit without close:\n%s", err);

	/* SIGKILL: the files stay until the next device opens. */
	int ready[2];
	REQUIRE(pipe(ready) == 0, "pipe");
	child = fork();
	if (child == 0) {
		REQUIRE(srt_open(), "open");
		(void)!write(ready[1], "r", 1);
		for (;;)
			pause();
	}
	char c;
	REQUIRE(read(ready[0], &c, 1) == 1, "ready");
	kill(child, SIGKILL);
	REQUIRE(waitpid(child, NULL, 0) == child, "waitpid");
	REQUIRE(entries(dir, "softrnic-") == 2, "a SIGKILLed device's files vanished by themselves");
	unsetenv("SOFTRNIC_ADDR");      /* any address: the reclaim is by pid */
	struct srt_device *dev = srt_open();
	REQUIRE(dev, "open");
	REQUIRE(entries(dir, "softrnic-") == 2, "the next device did not replace the dead one's files by its own");
	srt_close(dev);
	REQUIRE(entries(dir, "softrnic-") == 0, "files left after the close");
	unlink(log);
	rmdir(dir);
}

int main(void)
{
	static char err[16384];

	REQUIRE(mkdtemp(scratch), "mkdtemp %s", scratch);
	root = geteuid() == 0;
	unsetenv("SOFTRNIC_RUNTIME_DIR");
	unsetenv("SOFTRNIC_PCAP");
	unsetenv("SOFTRNIC_STATS_AT_EXIT");

	expect_case("SOFTRNIC_RUNTIME_DIR made 0700, chosen once per process and again after fork", case_env_made,
		    err, sizeof(err));
	expect_case("a relative SOFTRNIC_RUNTIME_DIR refused", case_relative, err, sizeof(err));
	REQUIRE(count_lines(err, "\n") == 1 && strstr(err, "relative/dir") && strstr(err, "absolute"),
	      "the refusal of a relative path:\n%s", err);
	expect_case("a link refused", case_link, err, sizeof(err));
	REQUIRE(count_lines(err, "\n") == 1 && strstr(err, "/link refused: a symbolic link") &&
	      strstr(err, "SOFTRNIC_RUNTIME_DIR"), "the refusal of a link (once):\n%s", err);
	expect_case("a directory others may write refused", case_too_open, err, sizeof(err));
	REQUIRE(count_lines(err, "\n") == 1 && strstr(err, "writable by group or others"), "the refusal:\n%s", err);
	expect_case("XDG_RUNTIME_DIR/softrnic, a too open default closed", case_xdg, err, sizeof(err));
	expect_case("XDG_RUNTIME_DIR not ours: /dev/shm/softrnic-<euid>", case_xdg_not_ours, err, sizeof(err));
	if (root) {
		expect_case("another user's directory refused, the device opens without it", case_squatted, err,
			    sizeof(err));
		char want[4200];
		snprintf(want, sizeof(want), "softrnic: runtime directory %s/squatted refused: owned by another user "
			 "(owner uid %u, we are uid 0); going on without stats file and host-local ring (set "
			 "SOFTRNIC_RUNTIME_DIR to a directory of our own)\n", scratch, NOBODY);
		REQUIRE(count_lines(err, "runtime directory") == 1 && strstr(err, want), "the squatter's line:\n%s", err);
		REQUIRE(count_lines(err, "counters:") == 2, "SOFTRNIC_STATS_AT_EXIT without a stats file:\n%s", err);
	}
	expect_case("srt_open_owned and srt_create_private", case_helpers, err, sizeof(err));
	expect_case("a FIFO at the stats name, a link at the ring's", case_plants_fifo, err, sizeof(err));
	REQUIRE(strstr(err, "no stats file") && strstr(err, "left alone"), "no word of the stats file:\n%s", err);
	expect_case("a link at the stats name, a FIFO at the ring's", case_plants_link, err, sizeof(err));
	expect_case("exit without close, fork, SIGKILL", case_exit_without_close, err, sizeof(err));

	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", scratch);
	REQUIRE(system(cmd) == 0, "cleanup");
	printf("runtime_dir: ok\n");
	return 0;
}
