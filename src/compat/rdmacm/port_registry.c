/*
 * port_registry.c — the loopback port space of librdmacm.so.1: which
 * softrnic process on this host listens on (port space, port).
 *
 * One machine, no configuration: each softrnic process binds its own
 * loopback address 127.0.0.N, so `rping -s -a 127.0.0.1 -p P` may sit on
 * 127.0.0.3 while `rping -c -a 127.0.0.1 -p P` sits on 127.0.0.4.  The
 * kernel's rdma_cm has one port space per host; this file gives softrnic's
 * processes one too, kept by the kernel itself so that nobody can forge,
 * squat or leave behind an entry:
 *
 *  - The port is an abstract Unix socket, "softrnic-cm-<ps>-<port>", bound
 *    and listening in the listener's process.  The kernel lets one socket
 *    hold a name (EADDRINUSE for the next, whichever user it is: the port is
 *    one listener's until released, as in the kernel's port space) and frees
 *    it when the process exits, however it exits.  Abstract names belong to
 *    the network namespace, as ports do.
 *  - The listener's device address is a second name,
 *    "softrnic-cm-<ps>-<port>@<address hex>#<random>", held by the same
 *    process.  A client connects to both and compares the pids the kernel
 *    reports for them (SO_PEERCRED): a name bound by anyone else is ignored.
 *    The random part makes the name unguessable, so it cannot be taken
 *    before the listener binds it.  Candidate names come from
 *    /proc/net/unix, which lists the abstract names of the namespace.
 *  - When the listener goes, the port is released at once (another process
 *    may listen there, as on the kernel), and the process keeps a hint,
 *    "softrnic-cm-<ps>-<port>~<address hex>#<random>", until it exits or
 *    listens again: a program that listens again on the same port (perftest
 *    does, between its parameter exchange and its test) is still found in
 *    between, and a REQ sent then gets a REJ from the right host.  A hint is
 *    believed only when its holder has the caller's uid.
 *
 * Connecting to a listening socket leaves a connection in its accept
 * queue; the listener's process empties the queues of its names whenever it
 * listens or a connection request reaches it (rcm_registry_drain), and the
 * queues are made long (SOMAXCONN) so that lookups between two of those
 * never find them full.  A full queue reads as "held, by someone unknown":
 * the port is not free, and the lookup fails over to the address given.
 *
 * Trade-off: one listener per port and port space on loopback devices, as
 * on the kernel; a device on a real address (SOFTRNIC_ADDR) needs none of
 * this, its address is the destination's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "compat/rdmacm/rdmacm_int.h"

#define NAME_PREFIX "softrnic-cm-"
#define MAX_HELD 256

/* The names this process holds for one (ps, port). */
struct held {
	uint16_t ps, port;
	int lock_fd;            /* the port itself; -1 once released */
	int addr_fd;            /* "@<address>#<random>" while listening, "~..." after; -1 none */
	unsigned listeners;     /* ids listening on it (two: one per family, AFONLY) */
};

static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct held held[MAX_HELD];
static unsigned n_held;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Fills an abstract address for name; returns its length. */
static socklen_t abstract_addr(struct sockaddr_un *sun, const char *name)
{
	size_t n = strlen(name);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (n > sizeof(sun->sun_path) - 1)
		n = sizeof(sun->sun_path) - 1;
	memcpy(sun->sun_path + 1, name, n);     /* sun_path[0] = 0: abstract */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* A socket bound to name and listening; -1 with errno (EADDRINUSE: held). */
static int hold_name(const char *name)
{
	struct sockaddr_un sun;
	socklen_t len = abstract_addr(&sun, name);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun, len) || listen(fd, SOMAXCONN)) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

enum probe { PROBE_FREE, PROBE_HELD, PROBE_UNKNOWN };

/* Who holds name: PROBE_FREE when nobody; PROBE_HELD with the holder's pid
 * and uid as the kernel reports them; PROBE_UNKNOWN when held but the
 * holder cannot be asked (its queue is full). */
static enum probe probe_name(const char *name, pid_t *pid, uid_t *uid)
{
	struct sockaddr_un sun;
	socklen_t len = abstract_addr(&sun, name);
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	enum probe r;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return PROBE_UNKNOWN;
	if (connect(fd, (struct sockaddr *)&sun, len) == 0) {
		r = PROBE_HELD;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || cred.pid <= 0)
			r = PROBE_UNKNOWN;
		else {
			*pid = cred.pid;
			*uid = cred.uid;
		}
	} else {
		r = errno == ECONNREFUSED || errno == ENOENT ? PROBE_FREE : PROBE_UNKNOWN;
	}
	close(fd);
	return r;
}

static void port_name(char *out, size_t cap, uint16_t ps, uint16_t port)
{
	snprintf(out, cap, NAME_PREFIX "%u-%u", ps, port);
}

/* Accepts and closes whatever lookups left queued on fd. */
static void drain_fd(int fd)
{
	int c;

	if (fd < 0)
		return;
	while ((c = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(c);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* A child of fork() holds nothing: the names stay its parent's, whose pid
 * the kernel reports for them. */
static void forget_in_child(void)
{
	for (unsigned i = 0; i < n_held; i++) {
		close_fd(&held[i].lock_fd);
		close_fd(&held[i].addr_fd);
	}
	n_held = 0;
	pthread_mutex_init(&held_lock, NULL);
}

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_in_child);
}

static struct held *find_held(uint16_t ps, uint16_t port)
{
	for (unsigned i = 0; i < n_held; i++)
		if (held[i].ps == ps && held[i].port == port)
			return &held[i];
	return NULL;
}

/* Binds the address name of (ps, port): '@' while listening, '~' for the
 * hint left after.  -1 when it cannot (then clients must name our address). */
static int hold_address(uint16_t ps, uint16_t port, uint32_t device_ip, char mark)
{
	char name[96];
	uint64_t nonce = 0;
	int fd = -1;

	for (int tries = 0; tries < 4 && fd < 0; tries++) {
		if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != (ssize_t)sizeof(nonce))
			nonce = (uint64_t)getpid() << 32 ^ (uint64_t)srt_now() ^ (uint64_t)tries;
		snprintf(name, sizeof(name), NAME_PREFIX "%u-%u%c%08x#%016llx", ps, port, mark,
			 (unsigned)be32toh(device_ip), (unsigned long long)nonce);
		fd = hold_name(name);
	}
	return fd;
}

int rcm_registry_listen(uint16_t ps, uint16_t port, uint32_t device_ip)
{
	char name[64];
	struct held *h;
	int lock_fd, e = 0;

	pthread_once(&atfork_once, install_atfork);
	port_name(name, sizeof(name), ps, port);
	pthread_mutex_lock(&held_lock);
	h = find_held(ps, port);
	if (h && h->lock_fd >= 0) {
		h->listeners++; /* listening already: rdma_listen says whether twice is allowed */
		goto out;
	}
	lock_fd = hold_name(name);
	if (lock_fd < 0) {
		e = errno == EADDRINUSE ? EADDRINUSE : errno;
		goto out;
	}
	if (!h) {
		if (n_held == MAX_HELD) {
			close(lock_fd);
			e = ENOBUFS;
			goto out;
		}
		h = &held[n_held++];
		*h = (struct held){ .ps = ps, .port = port, .lock_fd = -1, .addr_fd = -1 };
	}
	close_fd(&h->addr_fd);
	h->lock_fd = lock_fd;
	h->listeners = 1;
	h->addr_fd = hold_address(ps, port, device_ip, '@');
out:
	pthread_mutex_unlock(&held_lock);
	return e;
}

void rcm_registry_unlisten(uint16_t ps, uint16_t port, uint32_t device_ip)
{
	struct held *h;

	pthread_mutex_lock(&held_lock);
	h = find_held(ps, port);
	if (h && h->lock_fd >= 0 && --h->listeners == 0) {
		close_fd(&h->lock_fd);
		close_fd(&h->addr_fd);
		h->addr_fd = hold_address(ps, port, device_ip, '~');
	}
	pthread_mutex_unlock(&held_lock);
}

void rcm_registry_drain(void)
{
	pthread_mutex_lock(&held_lock);
	for (unsigned i = 0; i < n_held; i++) {
		drain_fd(held[i].lock_fd);
		drain_fd(held[i].addr_fd);
	}
	pthread_mutex_unlock(&held_lock);
}

/* Walks the abstract names of this namespace that start with prefix and
 * whose holder the kernel reports as pid (any pid when want_pid is 0; then
 * only names held by our own uid count).  Returns true with the address
 * encoded in the first such name. */
static bool find_address(const char *prefix, pid_t want_pid, uint32_t *device_ip)
{
	char line[512];
	size_t plen = strlen(prefix);
	bool found = false;
	FILE *f = fopen("/proc/net/unix", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *at = strstr(line, " @" NAME_PREFIX);
		unsigned hex;
		pid_t pid;
		uid_t uid;

		if (!at)
			continue;
		at += 2;        /* past " @" */
		at[strcspn(at, "\n")] = 0;
		if (strncmp(at, prefix, plen) || sscanf(at + plen, "%8x#", &hex) != 1)
			continue;
		if (probe_name(at, &pid, &uid) != PROBE_HELD)
			continue;
		if (want_pid ? pid != want_pid : uid != geteuid())
			continue;
		*device_ip = htobe32(hex);
		found = true;
	}
	fclose(f);
	return found;
}

bool rcm_registry_lookup(uint16_t ps, uint16_t port, uint32_t *device_ip)
{
	char name[64], prefix[72];
	pid_t pid = 0;
	uid_t uid;

	port_name(name, sizeof(name), ps, port);
	switch (probe_name(name, &pid, &uid)) {
	case PROBE_HELD:
		snprintf(prefix, sizeof(prefix), "%s@", name);
		return find_address(prefix, pid, device_ip);
	case PROBE_FREE:
		/* Nobody listens: a process of ours that did, and may again. */
		snprintf(prefix, sizeof(prefix), "%s~", name);
		return find_address(prefix, 0, device_ip);
	default:
		return false;
	}
}

bool rcm_registry_port_free(uint16_t ps, uint16_t port)
{
	char name[64];
	pid_t pid;
	uid_t uid;

	port_name(name, sizeof(name), ps, port);
	return probe_name(name, &pid, &uid) == PROBE_FREE;
}
