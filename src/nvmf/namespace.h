/*
 * namespace.h — the storage behind the target's one namespace: a file
 * (or block device) read and written with pread/pwrite, or memory.  The
 * namespace is an array of blocks of 2^lba_shift bytes; callers check
 * ranges (the target answers LBA Out of Range) before they get here.
 */
#ifndef SOFTRNIC_NVMF_NAMESPACE_H
#define SOFTRNIC_NVMF_NAMESPACE_H

#include <stdint.h>

struct nvmf_ns {
	int fd;                 /* the file, or -1 for memory */
	uint8_t *mem;           /* the memory backend */
	uint64_t blocks;        /* namespace size in blocks */
	unsigned lba_shift;     /* 9: 512-byte blocks, 12: 4096 */
	uint8_t uuid[16];       /* for the NS identification descriptors */
};

/* Open a file (created if missing when size_bytes is given; else its
 * size is the file's) or make memory of size_bytes; 0 or an errno. */
int nvmf_ns_open_file(struct nvmf_ns *ns, const char *path, uint64_t size_bytes, unsigned lba_shift);
int nvmf_ns_open_mem(struct nvmf_ns *ns, uint64_t size_bytes, unsigned lba_shift);
void nvmf_ns_close(struct nvmf_ns *ns);

/* Whole blocks; 0 or an errno. */
int nvmf_ns_read(const struct nvmf_ns *ns, uint64_t lba, uint32_t nblocks, void *buf);
int nvmf_ns_write(const struct nvmf_ns *ns, uint64_t lba, uint32_t nblocks, const void *buf);
int nvmf_ns_zero(const struct nvmf_ns *ns, uint64_t lba, uint64_t nblocks);        /* write zeroes */
int nvmf_ns_deallocate(const struct nvmf_ns *ns, uint64_t lba, uint64_t nblocks);  /* reads zeroes after */
int nvmf_ns_flush(const struct nvmf_ns *ns);

#endif
