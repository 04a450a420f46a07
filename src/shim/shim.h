/*
 * shim.h — libsoftrnic_shim.so, the LD_PRELOAD library `softrnic run`
 * puts under a program so that middleware finds the device where it looks
 * for a kernel RDMA device: /sys/class/infiniband/softrnic0/...,
 * /sys/class/infiniband_verbs/softrnic0/... and /dev/infiniband/...
 * (UCX, libibumad, the rdma-core suite's CM tests read these; libibverbs
 * itself is softrnic's and needs none of it).
 *
 * How: a small directory tree that looks like the kernel's (tree.c) lives
 * in a private per-user folder; the path-taking libc calls (interpose.c:
 * open, stat, access, opendir, scandir, realpath, ...) rewrite the three
 * prefixes above into that folder.  The device nodes are symbolic links
 * to /dev/null: a character device every user may open read-write, which
 * is all UCX checks.  The attributes that depend on the address the
 * process's device binds (node GUID, GID 0 and its netdev) are answered
 * at open time from the device itself, through the public verbs API, in a
 * memfd.  No root, no namespace, no kernel module.
 *
 * What it cannot cover (docs/ecosystem.md): statically linked programs and
 * raw system calls (Go's runtime, io_uring) bypass libc; relative paths
 * after a chdir into the fake tree are not rewritten; the device nodes are
 * /dev/null, so a program that issues kernel uverbs ioctls on them (rather
 * than calling libibverbs) gets ENOTTY.
 */
#ifndef SOFTRNIC_SHIM_H
#define SOFTRNIC_SHIM_H

#include <stddef.h>
#include <stdbool.h>

/* The folder holding the fake tree (built on first use), or NULL if it
 * could not be made (then nothing is rewritten). */
const char *shim_tree_root(void);

/* Whether `path` is under one of the kernel prefixes the shim covers. */
bool shim_covers(const char *path);

/* Rewrites `path` if it starts with one of the kernel prefixes the shim
 * covers: writes the tree path into buf and returns buf; otherwise (or if
 * the result does not fit) returns path unchanged. */
const char *shim_rewrite(const char *path, char *buf, size_t cap);

/* If `path` (as the program wrote it) names an attribute whose content
 * depends on the process's device, and the device answers, sets *handled
 * and returns a file descriptor with that content (a memfd; -1 with errno
 * if it cannot be made).  Otherwise *handled is false and the tree's
 * placeholder file is to be opened as usual. */
int shim_open_dynamic(const char *path, bool *handled);

#endif
