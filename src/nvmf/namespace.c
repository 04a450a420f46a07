/*
 * namespace.c — the namespace backends of namespace.h.  A file is read
 * and written with pread/pwrite and made durable with fdatasync (Flush);
 * deallocation punches a hole, so the blocks read as zeroes after it, as
 * the Identify Namespace's DLFEAT says.  Memory is one anonymous mapping
 * (zeroed pages until written).
 *
 * The namespace's identity (its NGUID and UUID, the same 16 bytes): for a
 * file, a hash of the file's device and inode, so a target restarted on
 * the same file presents the same namespace and a host that reconnects
 * keeps it (the kernel's nvme host drops a namespace whose identifiers
 * changed); for memory, whose contents a restart loses anyway, a new
 * random one each time.
 */
#include "nvmf/namespace.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 16 bytes from the 64-bit seed x (xorshift), as an RFC 4122 UUID of
 * `version` (4: random, 8: derived by softrnic's own rule). */
static void fill_uuid(uint8_t uuid[16], uint64_t x, unsigned version)
{
	if (!x)
		x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 16; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uuid[i] = (uint8_t)x;
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | version << 4);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);   /* RFC 4122 variant */
}

static void make_uuid(uint8_t uuid[16])
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	fill_uuid(uuid, (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 48, 4);
}

/* The same file (device and inode) gives the same identity. */
static void file_uuid(uint8_t uuid[16], const struct stat *st)
{
	uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a over dev, ino */
	uint64_t v[2] = { (uint64_t)st->st_dev, (uint64_t)st->st_ino };

	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 8; i++) {
			h ^= (uint8_t)(v[k] >> (8 * i));
			h *= 0x100000001b3ull;
		}
	fill_uuid(uuid, h, 8);
}

int nvmf_ns_open_file(struct nvmf_ns *ns, const char *path, uint64_t size_bytes, unsigned lba_shift)
{
	struct stat st;

	memset(ns, 0, sizeof(*ns));
	ns->lba_shift = lba_shift;
	ns->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (ns->fd < 0)
		return errno;
	if (fstat(ns->fd, &st)) {
		int e = errno;
		close(ns->fd);
		return e;
	}
	if (S_ISBLK(st.st_mode)) {
		off_t end = lseek(ns->fd, 0, SEEK_END);
		st.st_size = end < 0 ? 0 : end;
	} else if (size_bytes && (uint64_t)st.st_size < size_bytes) {
		if (ftruncate(ns->fd, (off_t)size_bytes)) {
			int e = errno;
			close(ns->fd);
			return e;
		}
		st.st_size = (off_t)size_bytes;
	}
	ns->blocks = (uint64_t)st.st_size >> lba_shift;
	if (!ns->blocks) {
		close(ns->fd);
		return EINVAL;          /* smaller than one block */
	}
	file_uuid(ns->uuid, &st);
	return 0;
}

int nvmf_ns_open_mem(struct nvmf_ns *ns, uint64_t size_bytes, unsigned lba_shift)
{
	memset(ns, 0, sizeof(*ns));
	ns->fd = -1;
	ns->lba_shift = lba_shift;
	ns->blocks = size_bytes >> lba_shift;
	if (!ns->blocks)
		return EINVAL;
	ns->mem = mmap(NULL, ns->blocks << lba_shift, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ns->mem == MAP_FAILED) {
		ns->mem = NULL;
		return errno;
	}
	make_uuid(ns->uuid);
	return 0;
}

void nvmf_ns_close(struct nvmf_ns *ns)
{
	if (ns->mem)
		munmap(ns->mem, ns->blocks << ns->lba_shift);
	if (ns->fd >= 0)
		close(ns->fd);
	ns->mem = NULL;
	ns->fd = -1;
}

/* pread/pwrite of exactly len bytes (they may return short). */
static int file_io(int fd, bool write, uint8_t *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0) {
			if (write)
				return EIO;
			memset(buf, 0, len);     /* past the end of a sparse file */
			return 0;
		}
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int nvmf_ns_read(const struct nvmf_ns *ns, uint64_t lba, uint32_t nblocks, void *buf)
{
	size_t len = (size_t)nblocks << ns->lba_shift;
	uint64_t off = lba << ns->lba_shift;

	if (ns->mem) {
		memcpy(buf, ns->mem + off, len);
		return 0;
	}
	return file_io(ns->fd, false, buf, len, (off_t)off);
}

int nvmf_ns_write(const struct nvmf_ns *ns, uint64_t lba, uint32_t nblocks, const void *buf)
{
	size_t len = (size_t)nblocks << ns->lba_shift;
	uint64_t off = lba << ns->lba_shift;

	if (ns->mem) {
		memcpy(ns->mem + off, buf, len);
		return 0;
	}
	return file_io(ns->fd, true, (uint8_t *)buf, len, (off_t)off);
}

int nvmf_ns_zero(const struct nvmf_ns *ns, uint64_t lba, uint64_t nblocks)
{
	uint64_t off = lba << ns->lba_shift, len = nblocks << ns->lba_shift;

	if (ns->mem) {
		memset(ns->mem + off, 0, len);
		return 0;
	}
	if (fallocate(ns->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	/* A file system without ZERO_RANGE: write the zeroes. */
	static const uint8_t zeroes[65536];
	while (len) {
		size_t n = len < sizeof(zeroes) ? (size_t)len : sizeof(zeroes);
		int e = file_io(ns->fd, true, (uint8_t *)zeroes, n, (off_t)off);
		if (e)
			return e;
		off += n;
		len -= n;
	}
	return 0;
}

int nvmf_ns_deallocate(const struct nvmf_ns *ns, uint64_t lba, uint64_t nblocks)
{
	uint64_t off = lba << ns->lba_shift, len = nblocks << ns->lba_shift;

	if (ns->mem) {
		memset(ns->mem + off, 0, len);
		return 0;
	}
	if (fallocate(ns->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	return nvmf_ns_zero(ns, lba, nblocks);
}

int nvmf_ns_flush(const struct nvmf_ns *ns)
{
	if (ns->fd >= 0 && fdatasync(ns->fd))
		return errno;
	return 0;
}
