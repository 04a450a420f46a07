/*
 * tree.c — the fake kernel RDMA tree of libsoftrnic_shim.so (shim.h): its
 * layout, where it lives, and the attributes answered from the live
 * device.
 *
 * The layout follows what the kernel's ib core publishes for a RoCE
 * device (drivers/infiniband/core/sysfs.c, as for rxe):
 *   /sys/class/infiniband/softrnic0/{node_type,node_guid,sys_image_guid,
 *       fw_ver,node_desc,hca_type,parent}
 *   /sys/class/infiniband/softrnic0/ports/1/{state,phys_state,rate,lid,
 *       sm_lid,sm_sl,lid_mask_count,cap_mask,link_layer}
 *   .../ports/1/gids/0, gid_attrs/types/0 ("RoCE v2"), gid_attrs/ndevs/0,
 *       pkeys/0
 *   /sys/class/infiniband_verbs/{abi_version, softrnic0/{ibdev,abi_version,dev}}
 *   /dev/infiniband/{softrnic0,uverbs0,rdma_cm} -> /dev/null
 * Values match what softrnic's verbs report (ibv_query_device/port in
 * src/compat/device.c): port 1 ACTIVE, 25 Gb/s as 1X EDR, Ethernet link
 * layer, CM supported, one GID, one P_Key.
 *
 * The static part is the same for every process of a user, so it is
 * written once, to $XDG_RUNTIME_DIR/softrnic-sysfs-v1 (or
 * /tmp/softrnic-<uid>/sysfs-v1), built under a temporary name and renamed
 * into place so that concurrent first runs never see half a tree.  A
 * change of layout must change the version in the name.  The parts that
 * depend on the address the process binds (node_guid, sys_image_guid,
 * gids/0, gid_attrs/ndevs/0) are files in the tree too, so that stat and
 * readdir see them, but their content comes from the process's device at
 * open time (shim_open_dynamic).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "shim/shim.h"

#define DEV "softrnic0"
#define IBDIR "sys/class/infiniband/" DEV
#define PORTDIR IBDIR "/ports/1"

#define TREE_VERSION "v1"

/* One entry of the tree: a directory (content NULL, link NULL), a file
 * with its content, or a symbolic link. */
struct tree_entry {
	const char *path;       /* relative to the tree root */
	const char *content;
	const char *link;
};

static const struct tree_entry tree[] = {
	{ "sys", NULL, NULL },
	{ "sys/class", NULL, NULL },
	{ "sys/class/infiniband", NULL, NULL },
	{ IBDIR, NULL, NULL },
	{ IBDIR "/node_type", "1: CA\n", NULL },
	{ IBDIR "/node_guid", "0000:0000:0000:0000\n", NULL },          /* dynamic */
	{ IBDIR "/sys_image_guid", "0000:0000:0000:0000\n", NULL },     /* dynamic */
	{ IBDIR "/fw_ver", "softrnic 0.1\n", NULL },                  /* SR_FW_VERSION */
	{ IBDIR "/node_desc", "softrnic " DEV "\n", NULL },
	{ IBDIR "/hca_type", "softrnic\n", NULL },
	{ IBDIR "/parent", "lo\n", NULL },
	{ IBDIR "/ports", NULL, NULL },
	{ PORTDIR, NULL, NULL },
	{ PORTDIR "/state", "4: ACTIVE\n", NULL },
	{ PORTDIR "/phys_state", "5: LinkUp\n", NULL },
	{ PORTDIR "/rate", "25 Gb/sec (1X EDR)\n", NULL },
	{ PORTDIR "/lid", "0x0\n", NULL },
	{ PORTDIR "/sm_lid", "0x0\n", NULL },
	{ PORTDIR "/sm_sl", "0\n", NULL },
	{ PORTDIR "/lid_mask_count", "0\n", NULL },
	{ PORTDIR "/cap_mask", "0x00010000\n", NULL },                  /* IBV_PORT_CM_SUP */
	{ PORTDIR "/link_layer", "Ethernet\n", NULL },
	{ PORTDIR "/gids", NULL, NULL },
	{ PORTDIR "/gids/0", "0000:0000:0000:0000:0000:0000:0000:0000\n", NULL }, /* dynamic */
	{ PORTDIR "/gid_attrs", NULL, NULL },
	{ PORTDIR "/gid_attrs/types", NULL, NULL },
	{ PORTDIR "/gid_attrs/types/0", "RoCE v2\n", NULL },
	{ PORTDIR "/gid_attrs/ndevs", NULL, NULL },
	{ PORTDIR "/gid_attrs/ndevs/0", "lo\n", NULL },                 /* dynamic */
	{ PORTDIR "/pkeys", NULL, NULL },
	{ PORTDIR "/pkeys/0", "0xffff\n", NULL },
	{ "sys/class/infiniband_verbs", NULL, NULL },
	{ "sys/class/infiniband_verbs/abi_version", "6\n", NULL },
	{ "sys/class/infiniband_verbs/" DEV, NULL, NULL },
	{ "sys/class/infiniband_verbs/" DEV "/ibdev", DEV "\n", NULL },
	{ "sys/class/infiniband_verbs/" DEV "/abi_version", "1\n", NULL },
	{ "sys/class/infiniband_verbs/" DEV "/dev", "231:192\n", NULL },
	{ "dev", NULL, NULL },
	{ "dev/infiniband", NULL, NULL },
	{ "dev/infiniband/" DEV, NULL, "/dev/null" },
	{ "dev/infiniband/uverbs0", NULL, "/dev/null" },
	{ "dev/infiniband/rdma_cm", NULL, "/dev/null" },
};

/* The kernel prefixes rewritten into the tree. */
static const char *const prefixes[] = {
	"/sys/class/infiniband_verbs",
	"/sys/class/infiniband",
	"/dev/infiniband",
};

/* ---- building the tree ----------------------------------------------------- */

static int write_file(const char *path, const char *content)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	size_t len = strlen(content);

	if (fd < 0)
		return -1;
	if (write(fd, content, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int build_tree(const char *dir)
{
	char p[PATH_MAX];

	for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++) {
		const struct tree_entry *e = &tree[i];
		int rc;

		if (snprintf(p, sizeof(p), "%s/%s", dir, e->path) >= (int)sizeof(p))
			return -1;
		if (e->link)
			rc = symlink(e->link, p);
		else if (e->content)
			rc = write_file(p, e->content);
		else
			rc = mkdir(p, 0755);
		if (rc)
			return -1;
	}
	return 0;
}

/* Removes a half-built or surplus tree, deepest entries first. */
static void remove_tree(const char *dir)
{
	char p[PATH_MAX];

	for (size_t i = sizeof(tree) / sizeof(tree[0]); i-- > 0;) {
		if (snprintf(p, sizeof(p), "%s/%s", dir, tree[i].path) >= (int)sizeof(p))
			continue;
		if (tree[i].content || tree[i].link)
			unlink(p);
		else
			rmdir(p);
	}
	rmdir(dir);
}

/* A folder of ours: owned by this user and writable by no one else, so
 * another user cannot plant a tree for us to read. */
static bool private_dir(const char *dir)
{
	struct stat st;

	return !lstat(dir, &st) && S_ISDIR(st.st_mode) && st.st_uid == getuid() && !(st.st_mode & 022);
}

static char tree_root[PATH_MAX];
static bool tree_ok;
static pthread_once_t tree_once = PTHREAD_ONCE_INIT;

static void make_tree(void)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char base[PATH_MAX / 2], tmp[PATH_MAX + 16];

	if (xdg && xdg[0] == '/' && strlen(xdg) < sizeof(base) && private_dir(xdg)) {
		if (snprintf(tree_root, sizeof(tree_root), "%s/softrnic-sysfs-" TREE_VERSION, xdg) >=
		    (int)sizeof(tree_root))
			return;
	} else {
		snprintf(base, sizeof(base), "/tmp/softrnic-%u", (unsigned)getuid());
		if (mkdir(base, 0700) && errno != EEXIST)
			return;
		if (!private_dir(base))
			return;
		if (snprintf(tree_root, sizeof(tree_root), "%s/sysfs-" TREE_VERSION, base) >= (int)sizeof(tree_root))
			return;
	}
	if (private_dir(tree_root)) {
		tree_ok = true;
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", tree_root);
	if (!mkdtemp(tmp))
		return;
	if (chmod(tmp, 0755) || build_tree(tmp)) {
		remove_tree(tmp);
		return;
	}
	if (rename(tmp, tree_root)) {
		remove_tree(tmp);       /* another process won the race */
	}
	tree_ok = private_dir(tree_root);
}

const char *shim_tree_root(void)
{
	pthread_once(&tree_once, make_tree);
	return tree_ok ? tree_root : NULL;
}

/* ---- rewriting paths --------------------------------------------------------- */

/* The length of the kernel prefix `path` starts with (followed by '/' or
 * the end), or 0. */
static size_t covered_prefix(const char *path)
{
	if (!path || path[0] != '/')
		return 0;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);

		if (!strncmp(path, prefixes[i], n) && (path[n] == '/' || path[n] == '\0'))
			return n;
	}
	return 0;
}

bool shim_covers(const char *path)
{
	return covered_prefix(path) != 0;
}

const char *shim_rewrite(const char *path, char *buf, size_t cap)
{
	const char *root;

	if (!covered_prefix(path))
		return path;
	root = shim_tree_root();
	if (!root || snprintf(buf, cap, "%s%s", root, path) >= (int)cap)
		return path;
	return buf;
}

/* ---- attributes answered by the live device ----------------------------------- */

struct verbs_api {
	struct ibv_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv_device **);
	const char *(*get_device_name)(struct ibv_device *);
	__be64 (*get_device_guid)(struct ibv_device *);
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
};

/* The process's libibverbs (softrnic's under `softrnic run`), loaded if the
 * program has not loaded it yet. */
static bool load_verbs(struct verbs_api *v)
{
	void *h = RTLD_DEFAULT;

	if (!dlsym(h, "ibv_get_device_list")) {
		h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
		if (!h)
			return false;
	}
	*(void **)&v->get_device_list = dlsym(h, "ibv_get_device_list");
	*(void **)&v->free_device_list = dlsym(h, "ibv_free_device_list");
	*(void **)&v->get_device_name = dlsym(h, "ibv_get_device_name");
	*(void **)&v->get_device_guid = dlsym(h, "ibv_get_device_guid");
	*(void **)&v->open_device = dlsym(h, "ibv_open_device");
	*(void **)&v->close_device = dlsym(h, "ibv_close_device");
	*(void **)&v->query_gid = dlsym(h, "ibv_query_gid");
	return v->get_device_list && v->free_device_list && v->get_device_name && v->get_device_guid &&
	       v->open_device && v->close_device && v->query_gid;
}

/* The name of the interface holding IPv4 address `a`, as the kernel's
 * gid_attrs/ndevs/N names the netdev of a GID. */
static void netdev_of(struct in_addr a, char *name, size_t cap)
{
	struct ifaddrs *ifs, *i;

	snprintf(name, cap, "lo");
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a.s_addr) {
			snprintf(name, cap, "%s", i->ifa_name);
			break;
		}
	freeifaddrs(ifs);
}

enum dyn_attr { DYN_NONE, DYN_NODE_GUID, DYN_GID0, DYN_NDEV0 };

static enum dyn_attr dynamic_attr(const char *path)
{
	static const struct {
		const char *path;
		enum dyn_attr attr;
	} dyn[] = {
		{ "/" IBDIR "/node_guid", DYN_NODE_GUID },
		{ "/" IBDIR "/sys_image_guid", DYN_NODE_GUID },
		{ "/" PORTDIR "/gids/0", DYN_GID0 },
		{ "/" PORTDIR "/gid_attrs/ndevs/0", DYN_NDEV0 },
	};

	for (size_t i = 0; i < sizeof(dyn) / sizeof(dyn[0]); i++)
		if (!strcmp(path, dyn[i].path))
			return dyn[i].attr;
	return DYN_NONE;
}

/* Formats the attribute from the device; false if softrnic0 is not the
 * process's device (then the tree's placeholder is served). */
static bool device_attr(enum dyn_attr attr, char *out, size_t cap)
{
	struct verbs_api v;
	struct ibv_device **list, *dev = NULL;
	bool ok = false;
	int n = 0;

	if (!load_verbs(&v) || !(list = v.get_device_list(&n)))
		return false;
	for (int i = 0; i < n; i++)
		if (!strcmp(v.get_device_name(list[i]), DEV))
			dev = list[i];
	if (dev && attr == DYN_NODE_GUID) {
		uint64_t g = be64toh(v.get_device_guid(dev));

		snprintf(out, cap, "%04x:%04x:%04x:%04x\n", (unsigned)(g >> 48), (unsigned)(g >> 32) & 0xffff,
			 (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
		ok = true;
	} else if (dev) {
		struct ibv_context *ctx = v.open_device(dev);
		union ibv_gid gid;

		if (ctx && !v.query_gid(ctx, 1, 0, &gid)) {
			if (attr == DYN_GID0) {
				size_t k = 0;

				for (int i = 0; i < 16; i += 2)
					k += (size_t)snprintf(out + k, cap - k, "%02x%02x%s", gid.raw[i], gid.raw[i + 1],
							      i < 14 ? ":" : "\n");
			} else {
				struct in_addr a;

				memcpy(&a, gid.raw + 12, 4);
				netdev_of(a, out, cap - 1);
				strcat(out, "\n");
			}
			ok = true;
		}
		if (ctx)
			v.close_device(ctx);
	}
	v.free_device_list(list);
	return ok;
}

int shim_open_dynamic(const char *path, bool *handled)
{
	enum dyn_attr attr = dynamic_attr(path);
	char text[128];
	int fd;

	*handled = attr != DYN_NONE;
	if (!*handled || !device_attr(attr, text, sizeof(text))) {
		*handled = false;       /* the placeholder in the tree answers */
		return -1;
	}
	fd = memfd_create("softrnic-sysfs", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) || lseek(fd, 0, SEEK_SET)) {
		close(fd);
		errno = EIO;
		return -1;
	}
	return fd;
}
