/*
 * Test-only LD_PRELOAD library for zebra on kernels without MPLS (never for
 * production). zebra 8.4 turns MPLS off when /proc/sys/net/mpls is missing, and
 * never hands FPM a route or LSP the kernel refused. This library:
 *   - reports /proc/sys/net/mpls as a directory to stat(), so MPLS stays on;
 *   - rewrites zebra's netlink requests so the kernel accepts them: an AF_MPLS
 *     route becomes "replace 127.255.255.254/32 blackhole in table 4242", and
 *     MPLS encap (RTA_ENCAP/RTA_ENCAP_TYPE, also inside RTA_MULTIPATH; NHA_ENCAP/
 *     NHA_ENCAP_TYPE of nexthop objects) is dropped.
 * FPM then gets the real routes and LSPs; the kernel keeps unlabelled copies.
 *
 * Build: cc -O2 -shared -fPIC -o nompls_shim.so nompls_shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#ifndef AF_MPLS
#define AF_MPLS 28
#endif
#define RTM_NEWNEXTHOP_ 104
#define NHA_ENCAP_TYPE_ 7
#define NHA_ENCAP_ 8
#define RTA_ENCAP_TYPE_ 21
#define RTA_ENCAP_ 22

static const char MPLS_DIR[] = "/proc/sys/net/mpls";

static int fake_dir(const char *path, struct stat *st)
{
	if (path && strcmp(path, MPLS_DIR) == 0) {
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFDIR | 0555;
		return 1;
	}
	return 0;
}

int stat(const char *path, struct stat *st)
{
	static int (*real)(const char *, struct stat *);
	if (fake_dir(path, st))
		return 0;
	if (!real)
		real = dlsym(RTLD_NEXT, "stat");
	return real(path, st);
}

/* Copies the attributes in [a, end) to out, leaving out the encap ones;
 * returns the bytes written. Nested RTA_MULTIPATH next hops are filtered too. */
static size_t copy_attrs(const char *a, const char *end, char *out, int nexthop_obj, int in_mp);

static size_t copy_multipath(const char *p, const char *end, char *out)
{
	size_t n = 0;
	while (p + sizeof(struct rtnexthop) <= end) {
		const struct rtnexthop *h = (const void *)p;
		if (h->rtnh_len < sizeof(*h) || p + h->rtnh_len > end)
			break;
		struct rtnexthop *o = (void *)(out + n);
		memcpy(o, h, sizeof(*h));
		size_t k = copy_attrs(p + sizeof(*h), p + h->rtnh_len, out + n + sizeof(*h), 0, 1);
		o->rtnh_len = sizeof(*h) + k;
		n += RTA_ALIGN(o->rtnh_len);
		p += RTA_ALIGN(h->rtnh_len);
	}
	return n;
}

static size_t copy_attrs(const char *a, const char *end, char *out, int nexthop_obj, int in_mp)
{
	size_t n = 0;
	(void)in_mp;
	while (a + sizeof(struct rtattr) <= end) {
		const struct rtattr *r = (const void *)a;
		if (r->rta_len < sizeof(*r) || a + r->rta_len > end)
			break;
		unsigned t = r->rta_type & NLA_TYPE_MASK;
		int drop = nexthop_obj ? (t == NHA_ENCAP_ || t == NHA_ENCAP_TYPE_)
				       : (t == RTA_ENCAP_ || t == RTA_ENCAP_TYPE_);
		if (!drop) {
			if (!nexthop_obj && t == RTA_MULTIPATH) {
				struct rtattr *o = (void *)(out + n);
				*o = *r;
				size_t k = copy_multipath(a + sizeof(*r), a + r->rta_len,
							  out + n + sizeof(*r));
				o->rta_len = sizeof(*r) + k;
				n += RTA_ALIGN(o->rta_len);
			} else {
				memcpy(out + n, a, r->rta_len);
				n += RTA_ALIGN(r->rta_len);
			}
		}
		a += RTA_ALIGN(r->rta_len);
	}
	return n;
}

/* Rewrites one netlink message into out; returns its new length. */
static size_t rewrite(const struct nlmsghdr *h, char *out)
{
	if ((h->nlmsg_type == RTM_NEWROUTE || h->nlmsg_type == RTM_DELROUTE) &&
	    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct rtmsg))) {
		const struct rtmsg *rt = NLMSG_DATA(h);
		if (rt->rtm_family == AF_MPLS) {
			/* replace 127.255.255.254/32 blackhole table 4242 (acked 0) */
			struct nlmsghdr *o = (void *)out;
			*o = *h;
			o->nlmsg_type = RTM_NEWROUTE;
			o->nlmsg_flags = (h->nlmsg_flags & (NLM_F_REQUEST | NLM_F_ACK)) |
					 NLM_F_CREATE | NLM_F_REPLACE;
			struct rtmsg *r = NLMSG_DATA(o);
			memset(r, 0, sizeof(*r));
			r->rtm_family = AF_INET;
			r->rtm_dst_len = 32;
			r->rtm_table = RT_TABLE_UNSPEC;
			r->rtm_protocol = RTPROT_STATIC;
			r->rtm_scope = RT_SCOPE_UNIVERSE;
			r->rtm_type = RTN_BLACKHOLE;
			char *a = (char *)r + NLMSG_ALIGN(sizeof(*r));
			struct rtattr *dst = (void *)a;
			dst->rta_type = RTA_DST;
			dst->rta_len = RTA_LENGTH(4);
			unsigned char ip[4] = {127, 255, 255, 254};
			memcpy(RTA_DATA(dst), ip, 4);
			struct rtattr *tb = (void *)(a + RTA_ALIGN(dst->rta_len));
			tb->rta_type = RTA_TABLE;
			tb->rta_len = RTA_LENGTH(4);
			unsigned table = 4242;
			memcpy(RTA_DATA(tb), &table, 4);
			o->nlmsg_len = (a - out) + RTA_ALIGN(dst->rta_len) + RTA_ALIGN(tb->rta_len);
			return o->nlmsg_len;
		}
		size_t head = NLMSG_LENGTH(sizeof(struct rtmsg));
		memcpy(out, h, NLMSG_ALIGN(head));
		size_t k = copy_attrs((const char *)h + NLMSG_ALIGN(head), (const char *)h + h->nlmsg_len,
				      out + NLMSG_ALIGN(head), 0, 0);
		((struct nlmsghdr *)out)->nlmsg_len = NLMSG_ALIGN(head) + k;
		return NLMSG_ALIGN(head) + k;
	}
	if (h->nlmsg_type == RTM_NEWNEXTHOP_ && h->nlmsg_len >= NLMSG_LENGTH(8)) {
		size_t head = NLMSG_LENGTH(8);
		memcpy(out, h, NLMSG_ALIGN(head));
		size_t k = copy_attrs((const char *)h + NLMSG_ALIGN(head), (const char *)h + h->nlmsg_len,
				      out + NLMSG_ALIGN(head), 1, 0);
		((struct nlmsghdr *)out)->nlmsg_len = NLMSG_ALIGN(head) + k;
		return NLMSG_ALIGN(head) + k;
	}
	memcpy(out, h, h->nlmsg_len);
	return h->nlmsg_len;
}

static int is_rtnl(int fd)
{
	int v = 0;
	socklen_t l = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) != 0 || v != AF_NETLINK)
		return 0;
	l = sizeof(v);
	return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l) == 0 && v == NETLINK_ROUTE;
}

/* The rewritten copy of a request, or NULL when it needs none. */
static char *rewrite_all(const char *buf, size_t len, size_t *out_len)
{
	/* An MPLS request may grow into its replacement: room for twice the size. */
	char *out = malloc(2 * len + 256);
	if (!out)
		return NULL;
	size_t n = 0;
	const char *p = buf;
	while (p + sizeof(struct nlmsghdr) <= buf + len) {
		const struct nlmsghdr *h = (const void *)p;
		if (h->nlmsg_len < sizeof(*h) || p + h->nlmsg_len > buf + len)
			break;
		n = NLMSG_ALIGN(n);
		n += rewrite(h, out + n);
		p += NLMSG_ALIGN(h->nlmsg_len);
	}
	*out_len = n;
	return out;
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	static ssize_t (*real)(int, const struct msghdr *, int);
	if (!real)
		real = dlsym(RTLD_NEXT, "sendmsg");
	if (!is_rtnl(fd) || m->msg_iovlen == 0)
		return real(fd, m, flags);
	size_t total = 0;
	for (size_t i = 0; i < m->msg_iovlen; i++)
		total += m->msg_iov[i].iov_len;
	char *flat = malloc(total ? total : 1);
	if (!flat)
		return real(fd, m, flags);
	size_t at = 0;
	for (size_t i = 0; i < m->msg_iovlen; i++) {
		memcpy(flat + at, m->msg_iov[i].iov_base, m->msg_iov[i].iov_len);
		at += m->msg_iov[i].iov_len;
	}
	size_t n = 0;
	char *out = rewrite_all(flat, total, &n);
	free(flat);
	if (!out)
		return real(fd, m, flags);
	struct iovec iov = {out, n};
	struct msghdr mm = *m;
	mm.msg_iov = &iov;
	mm.msg_iovlen = 1;
	ssize_t r = real(fd, &mm, flags);
	free(out);
	return r < 0 ? r : (ssize_t)total;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tl)
{
	static ssize_t (*real)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	if (!real)
		real = dlsym(RTLD_NEXT, "sendto");
	if (!is_rtnl(fd))
		return real(fd, buf, len, flags, to, tl);
	size_t n = 0;
	char *out = rewrite_all(buf, len, &n);
	if (!out)
		return real(fd, buf, len, flags, to, tl);
	ssize_t r = real(fd, out, n, flags, to, tl);
	free(out);
	return r < 0 ? r : (ssize_t)len;
}
