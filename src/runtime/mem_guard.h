/*
 * mem_guard.h — touching registered memory without dying of it.
 *
 * A NIC reads and writes the pages of a memory region by DMA: when the
 * program unmaps or protects them after registering them, the pinned
 * pages stay the NIC's and nothing happens to it.  softrnic is the NIC and
 * lives in the process: the same access is a load or a store, and a page
 * that is gone raises SIGSEGV (SIGBUS past the end of a file).  A peer's
 * RDMA WRITE into such a region must end in a remote access error NAK,
 * not kill the owner.
 *
 * So every copy into or out of region memory goes through these guarded
 * operations.  One SIGSEGV/SIGBUS handler, installed once per process
 * (srt_guard_install, at device open), looks at the thread's armed guard:
 * a fault inside the pages the operation was given ends the operation,
 * which returns false; any other fault goes to the handler that was there
 * before (the program's own, a sanitizer's, or the default action), as if
 * softrnic's handler were not there.  On x86-64 the copies and touches
 * are assembly routines whose faults the handler turns into a return of
 * false (an exception table, as the kernel's copy_from_user): no cost
 * beyond the copy's.  Elsewhere, for the ICRC and under
 * AddressSanitizer, a guard is a sigsetjmp (no signal mask saved: no
 * system call) and two thread-local stores.
 *
 * Limits: a program that installs its own SIGSEGV handler after the
 * device opened, without chaining to the one it replaced, takes faults
 * away from the guard (such a fault then ends the process as before).
 * The handler it chains to runs with softrnic's signal mask, not with the
 * sa_mask that handler was installed with.  A program whose own handler
 * maps or unprotects pages on demand (user-space paging) does not get
 * the faults of softrnic's copies in its regions: the access fails
 * instead, as it would on an ODP region whose page is not there.
 *
 * srt_mem_check is registration's rule (ibv_reg_mr, ibv_rereg_mr): the
 * kernel pins every page of a region (ib_umem_get) and refuses, EFAULT, a
 * range with a page that is not mapped, or not writable when the access
 * asks for writing.
 */
#ifndef SOFTRNIC_RUNTIME_MEM_GUARD_H
#define SOFTRNIC_RUNTIME_MEM_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

/* Install the fault handler (once per process; later calls do nothing).
 * Returns 0 or an errno from sigaction. */
int srt_guard_install(void);

/* memcpy(dst, src, n); false if a page of either side faulted (the bytes
 * before the fault may have been copied).  An 8-byte copy to an 8-byte
 * aligned dst is one store (an ATOMIC WRITE's, IBTA 9.4.5). */
bool srt_guard_copy(void *dst, const void *src, size_t n);
/* The pieces, one after another, to `to`; false if a page of a piece
 * faulted.  `to` is the caller's memory: a fault there is a fault of the
 * program (passed on) under the sigsetjmp guard; the x86-64 routine
 * cannot tell the sides apart and returns false for it too. */
bool srt_guard_gather(uint8_t *to, const struct wire_piece *pc, unsigned n);
/* Touch one byte of every page of [p, p+n): read it, and with `write`
 * store it back by a compare-and-swap (a store that changes nothing, even
 * against a concurrent writer).  false if a page faulted. */
bool srt_guard_touch(const void *p, size_t n, bool write);
/* wire_icrc_udp_payload_pieces into *crc; false if a page of a piece
 * faulted. */
bool srt_guard_icrc(const struct wire_ip *ip, uint16_t sport, const struct wire_piece *pc, unsigned n,
		    uint32_t *crc);

/* rnic_io.mem_copy and mem_probe (rnic.h): srt_guard_copy and
 * srt_guard_touch. */
bool srt_io_mem_copy(void *ctx, void *dst, const void *src, size_t len);
bool srt_io_mem_probe(void *ctx, const void *addr, size_t len, bool write);

/* May [addr, addr+len) be registered without on-demand paging, for
 * writing when `write` (ib_access_writable: local or remote write, remote
 * atomic, memory window bind)?  0, EINVAL when the range wraps around the
 * address space (as the kernel's ib_umem_get), EFAULT when a page of it
 * is not mapped, is PROT_NONE, or is not writable and `write` is asked. */
int srt_mem_check(const void *addr, size_t len, bool write);

#endif
