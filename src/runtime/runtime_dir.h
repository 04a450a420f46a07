/*
 * runtime_dir.h — where the files softrnic shares between processes live
 * (the stats files of stats_file.h, the host-local rings of local_path.h),
 * and how they are opened.
 *
 * One private directory per user, chosen once per process (and again in a
 * child of fork() or after a change of effective uid):
 *   1. SOFTRNIC_RUNTIME_DIR, if set (an absolute path);
 *   2. else $XDG_RUNTIME_DIR/softrnic, if XDG_RUNTIME_DIR is a directory
 *      owned by us and writable by no one else (systemd's /run/user/<uid>,
 *      a tmpfs);
 *   3. else /dev/shm/softrnic-<euid>.
 * It is made (mode 0700) when missing, and every time it is opened it is
 * checked through the descriptor itself (open O_DIRECTORY|O_NOFOLLOW, then
 * fstat): a directory, not a symbolic link, owned by our effective uid,
 * writable by no one else.  A default directory of ours that is too open
 * is made 0700; SOFTRNIC_RUNTIME_DIR, the user's own choice, is only
 * checked.  A directory that fails (another user made /dev/shm/softrnic-
 * <our uid> first, or put a link there) is refused: one line on stderr
 * says so, once per process, and the process goes on without shared
 * files — no stats file, no host-local ring, the device works over UDP —
 * so that nobody can stop another user's programs by squatting a name.
 *
 * Within the directory, files another process may have made are opened
 * with srt_open_owned (never following a link, never blocking on a FIFO,
 * regular files of the expected owner only) and our own are made with
 * srt_create_private (O_EXCL, mode 0600; an earlier file of ours at the
 * name — a dead process's — is removed first), so nothing is truncated or
 * written that softrnic did not just create.
 *
 * The rings want memory, not a disk: the default directories are tmpfs
 * on systemd hosts (/run/user/<uid>) and everywhere (/dev/shm).  A
 * SOFTRNIC_RUNTIME_DIR on a disk works, its rings' pages written back now
 * and then (srt_runtime_dir_on_tmpfs tells; `softrnic devices` says).
 */
#ifndef SOFTRNIC_RUNTIME_RUNTIME_DIR_H
#define SOFTRNIC_RUNTIME_RUNTIME_DIR_H

#include <stdbool.h>
#include <sys/types.h>

/* The runtime directory, opened (O_RDONLY|O_DIRECTORY|O_CLOEXEC) and
 * checked as above; the caller closes it.  create: make it if missing (a
 * device opening); without, a missing directory is -1 with errno ENOENT
 * and no message (`softrnic stats`).  -1 too when it is refused (the
 * reason said once on stderr). */
int srt_runtime_dir_open(bool create);
/* Its path, as chosen for this process (set by srt_runtime_dir_open). */
const char *srt_runtime_dir_path(void);
/* Is the directory open as dirfd on a memory file system (tmpfs, ramfs)? */
bool srt_runtime_dir_on_tmpfs(int dirfd);

/* Root only: calls fn for each other user's runtime directory found at
 * the default places (/run/user/<uid>/softrnic, /dev/shm/softrnic-<uid>)
 * that passes the checks for the uid its path names: a directory, no
 * link, owned by that uid, writable by no one else.  dirfd is closed
 * after fn returns.  Directories set by SOFTRNIC_RUNTIME_DIR cannot be
 * found this way. */
void srt_runtime_dirs_of_others(void (*fn)(void *arg, int dirfd, uid_t owner), void *arg);

/* A file in dirfd that another process may have made, opened with
 * flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC (a link is not followed, a
 * FIFO never blocks the open) and kept only if it is a regular file owned
 * by `owner`.  -1 otherwise, with errno (ELOOP for a link, EINVAL for
 * anything not a regular file, EPERM for another owner). */
int srt_open_owned(int dirfd, const char *name, int flags, uid_t owner);
/* A new file of ours in dirfd: O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC with
 * flags, mode 0600.  If the name exists and srt_open_owned accepts it (a
 * file a dead process of ours left), it is removed and the file created
 * again; anything else there (a link, a FIFO, another user's file) fails
 * with EEXIST and is left alone. */
int srt_create_private(int dirfd, const char *name, int flags);

/* Is process pid alive (not a zombie) and running with effective uid
 * `uid`?  What "the owner of this file still runs" means when pids are
 * reused: a pid now held by someone else's process is not ours. */
bool srt_process_runs_as(pid_t pid, uid_t uid);

#endif
