/* SPDX-License-Identifier: BSD-3-Clause */
/* Prints fi_tostr / fi_tostr_r output for a fixed, large set of inputs from
 * the libfabric .so named on the command line, so Debian's library and ours
 * can be diffed (tostr_diff.sh).  Not linked to libfabric: the library is
 * dlopen'ed.  Only inputs that Debian's 1.17 handles without crashing or
 * printing addresses of our stack are used.
 *
 * Lines that are meant to differ are kept recognisable for the diff script:
 * the library version is printed on lines starting with "VERSION:". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

typedef char *(*tostr_fn)(const void *, enum fi_type);
typedef char *(*tostr_r_fn)(char *, size_t, const void *, enum fi_type);

static tostr_fn p_tostr;
static tostr_r_fn p_tostr_r;

/* Attribute structs get generous zeroed room: a 2.0 library reads fields
 * that 1.17 structs do not have. */
static void *zalloc(void)
{
	void *p = calloc(1, 1024);
	if (!p)
		abort();
	return p;
}

static void show(const char *label, const void *data, int type)
{
	char *s = p_tostr(data, (enum fi_type)type);
	if (s)
		printf("== %s\n%s\n", label, s);
	else
		printf("== %s => NULL\n", label);
}

/* fi_tostr_r at every length 0..max in steps: the return value, the length
 * and an FNV-1a hash over the buffer up to len+2 (so bytes written past the
 * string show up), plus the tail of the string. */
static void trunc_scan(const char *label, const void *data, int type, size_t max, size_t step)
{
	static char buf[20000];
	printf("== trunc %s\n", label);
	for (size_t len = 0; len <= max; len += step) {
		memset(buf, '#', len + 8);
		char *r = p_tostr_r(buf, len, data, (enum fi_type)type);
		uint64_t h = 1469598103934665603ULL;
		for (size_t k = 0; k < len + 2; k++)
			h = (h ^ (unsigned char)buf[k]) * 1099511628211ULL;
		size_t n = r ? strnlen(buf, len) : 0;
		const char *tail = r ? buf + (n > 24 ? n - 24 : 0) : "";
		printf("%zu %s %zu %016llx [", len, r == buf ? "buf" : (r ? "other" : "NULL"), n,
		       (unsigned long long)h);
		for (const char *c = tail; r && *c; c++)
			if (*c == '\n')
				printf("\\n");
			else
				putchar(*c);
		printf("]\n");
	}
}

/* ---- enums and flags ---------------------------------------------------- */

static const struct {
	int type;
	const char *name;
	int max;
} enum_types[] = {
	{FI_TYPE_EP_TYPE, "EP_TYPE", 8},       {FI_TYPE_ADDR_FORMAT, "ADDR_FORMAT", 18},
	{FI_TYPE_THREADING, "THREADING", 8},   {FI_TYPE_PROGRESS, "PROGRESS", 5},
	{FI_TYPE_PROTOCOL, "PROTOCOL", 30},    {FI_TYPE_AV_TYPE, "AV_TYPE", 5},
	{FI_TYPE_ATOMIC_TYPE, "ATOMIC_TYPE", 18}, {FI_TYPE_ATOMIC_OP, "ATOMIC_OP", 22},
	{FI_TYPE_EQ_EVENT, "EQ_EVENT", 10},    {FI_TYPE_OP_TYPE, "OP_TYPE", 14},
	{FI_TYPE_COLLECTIVE_OP, "COLLECTIVE_OP", 12}, {FI_TYPE_HMEM_IFACE, "HMEM_IFACE", 9},
	{FI_TYPE_CQ_FORMAT, "CQ_FORMAT", 8},   {FI_TYPE_LOG_LEVEL, "LOG_LEVEL", 7},
	{FI_TYPE_LOG_SUBSYS, "LOG_SUBSYS", 13},
};

static const struct {
	int type;
	const char *name;
} flag_types[] = {
	{FI_TYPE_CAPS, "CAPS"},           {FI_TYPE_OP_FLAGS, "OP_FLAGS"},
	{FI_TYPE_MSG_ORDER, "MSG_ORDER"}, {FI_TYPE_MODE, "MODE"},
	{FI_TYPE_CQ_EVENT_FLAGS, "CQ_EVENT_FLAGS"}, {FI_TYPE_MR_MODE, "MR_MODE"},
};

static void dump_enums(void)
{
	const uint64_t odd[] = {0x7fffffff, 0x80000000, 0x80000001, 0x80000005, 0xffffffff,
				0x100000001ULL, ~0ULL};
	char label[96];
	for (size_t t = 0; t < sizeof enum_types / sizeof *enum_types; t++) {
		for (int v = 0; v <= enum_types[t].max; v++) {
			uint64_t x = (uint64_t)v;
			snprintf(label, sizeof label, "%s %d", enum_types[t].name, v);
			show(label, &x, enum_types[t].type);
		}
		for (size_t k = 0; k < sizeof odd / sizeof *odd; k++) {
			snprintf(label, sizeof label, "%s %#llx", enum_types[t].name,
				 (unsigned long long)odd[k]);
			show(label, &odd[k], enum_types[t].type);
		}
	}
}

static void dump_flags(void)
{
	const uint64_t combos[] = {
		0, ~0ULL, 0x5555555555555555ULL, 0xaaaaaaaaaaaaaaaaULL, 0xffffffffULL,
		0xffffffff00000000ULL, FI_MSG | FI_TAGGED | FI_SEND | FI_RECV,
		FI_CONTEXT | FI_CONTEXT2 | FI_MSG_PREFIX, FI_ORDER_SAS | FI_ORDER_RMA_RAR,
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
		FI_COMPLETION | FI_INJECT | FI_TRANSMIT_COMPLETE, FI_CLAIM | FI_DISCARD,
	};
	char label[96];
	for (size_t t = 0; t < sizeof flag_types / sizeof *flag_types; t++) {
		for (int b = 0; b < 64; b++) {
			uint64_t x = 1ULL << b;
			snprintf(label, sizeof label, "%s bit %d", flag_types[t].name, b);
			show(label, &x, flag_types[t].type);
		}
		for (size_t k = 0; k < sizeof combos / sizeof *combos; k++) {
			snprintf(label, sizeof label, "%s %#llx", flag_types[t].name,
				 (unsigned long long)combos[k]);
			show(label, &combos[k], flag_types[t].type);
		}
	}
}

/* ---- structures ---------------------------------------------------------- */

static struct fi_info *new_info(void)
{
	struct fi_info *i = zalloc();
	i->tx_attr = zalloc();
	i->rx_attr = zalloc();
	i->ep_attr = zalloc();
	i->domain_attr = zalloc();
	i->fabric_attr = zalloc();
	return i;
}

static char dom_name[] = "mlx5_0";
static char fab_name[] = "IB-0xfe80000000000000";
static char prov_name[] = "verbs;ofi_rxm";

static void populate(struct fi_info *i, uint64_t seed)
{
	i->caps = FI_MSG | FI_RMA | FI_TAGGED | FI_READ | FI_WRITE | FI_RECV | FI_SEND |
		  FI_REMOTE_READ | FI_REMOTE_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM | seed;
	i->mode = FI_CONTEXT | FI_MSG_PREFIX;
	i->addr_format = FI_SOCKADDR_IN;
	i->src_addrlen = 16;
	i->dest_addrlen = 0;
	struct fi_tx_attr *tx = i->tx_attr;
	tx->caps = FI_MSG | FI_SEND | FI_TAGGED;
	tx->mode = FI_CONTEXT2;
	tx->op_flags = FI_COMPLETION | FI_INJECT_COMPLETE;
	tx->msg_order = FI_ORDER_SAS | FI_ORDER_RAW | FI_ORDER_ATOMIC_WAW;
	tx->comp_order = FI_ORDER_STRICT | FI_ORDER_DATA;
	tx->inject_size = 64;
	tx->size = 1024;
	tx->iov_limit = 4;
	tx->rma_iov_limit = 1;
	tx->tclass = FI_TC_BULK_DATA;
	struct fi_rx_attr *rx = i->rx_attr;
	rx->caps = FI_MSG | FI_RECV | FI_MULTI_RECV;
	rx->mode = FI_RX_CQ_DATA;
	rx->op_flags = FI_MULTI_RECV;
	rx->msg_order = FI_ORDER_SAS;
	rx->comp_order = FI_ORDER_DATA;
	rx->total_buffered_recv = 65536;
	rx->size = 4096;
	rx->iov_limit = 8;
	struct fi_ep_attr *ep = i->ep_attr;
	ep->type = FI_EP_RDM;
	ep->protocol = FI_PROTO_RXM;
	ep->protocol_version = 1;
	ep->max_msg_size = SIZE_MAX;
	ep->msg_prefix_size = 16;
	ep->max_order_raw_size = 1ULL << 40;
	ep->max_order_war_size = 0;
	ep->max_order_waw_size = 12345;
	ep->mem_tag_format = 0xaaaaaaaaaaaaaaaaULL;
	ep->tx_ctx_cnt = 1;
	ep->rx_ctx_cnt = 2;
	ep->auth_key_size = 3;
	struct fi_domain_attr *d = i->domain_attr;
	d->domain = (struct fid_domain *)(uintptr_t)0xdeadbeef;
	d->name = dom_name;
	d->threading = FI_THREAD_DOMAIN;
	d->control_progress = FI_PROGRESS_AUTO;
	d->data_progress = FI_PROGRESS_MANUAL;
	d->resource_mgmt = FI_RM_ENABLED;
	d->av_type = FI_AV_TABLE;
	d->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	d->mr_key_size = 4;
	d->cq_data_size = 8;
	d->cq_cnt = 65536;
	d->ep_cnt = 32768;
	d->tx_ctx_cnt = 16;
	d->rx_ctx_cnt = 17;
	d->max_ep_tx_ctx = 18;
	d->max_ep_rx_ctx = 19;
	d->max_ep_stx_ctx = 20;
	d->max_ep_srx_ctx = 21;
	d->cntr_cnt = 22;
	d->mr_iov_limit = 23;
	d->caps = FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV;
	d->mode = FI_LOCAL_MR;
	d->auth_key_size = 0;
	d->max_err_data = 256;
	d->mr_cnt = 1 << 20;
	d->tclass = FI_TC_DSCP | 46;
	struct fi_fabric_attr *f = i->fabric_attr;
	f->fabric = (struct fid_fabric *)(uintptr_t)0x1234;
	f->name = fab_name;
	f->prov_name = prov_name;
	f->prov_version = FI_VERSION(117, 30);
	f->api_version = FI_VERSION(1, 17);
}

static void dump_attrs(void)
{
	struct fi_info *z = new_info();
	show("TX_ATTR zero", z->tx_attr, FI_TYPE_TX_ATTR);
	show("RX_ATTR zero", z->rx_attr, FI_TYPE_RX_ATTR);
	show("EP_ATTR zero", z->ep_attr, FI_TYPE_EP_ATTR);
	show("DOMAIN_ATTR zero", z->domain_attr, FI_TYPE_DOMAIN_ATTR);
	show("FABRIC_ATTR zero", z->fabric_attr, FI_TYPE_FABRIC_ATTR);
	show("INFO zero", z, FI_TYPE_INFO);

	struct fi_info *p = new_info();
	populate(p, 0);
	show("TX_ATTR full", p->tx_attr, FI_TYPE_TX_ATTR);
	show("RX_ATTR full", p->rx_attr, FI_TYPE_RX_ATTR);
	show("EP_ATTR full", p->ep_attr, FI_TYPE_EP_ATTR);
	show("DOMAIN_ATTR full", p->domain_attr, FI_TYPE_DOMAIN_ATTR);
	show("FABRIC_ATTR full", p->fabric_attr, FI_TYPE_FABRIC_ATTR);

	/* Every flag word saturated, every enum out of range. */
	struct fi_info *m = new_info();
	m->caps = m->mode = ~0ULL;
	m->addr_format = 0x80000007;
	uint64_t *w[] = {&m->tx_attr->caps, &m->tx_attr->mode, &m->tx_attr->op_flags,
			 &m->tx_attr->msg_order, &m->rx_attr->caps, &m->rx_attr->mode,
			 &m->rx_attr->op_flags, &m->rx_attr->msg_order, &m->domain_attr->caps,
			 &m->domain_attr->mode};
	for (size_t k = 0; k < sizeof w / sizeof *w; k++)
		*w[k] = ~0ULL;
	m->tx_attr->comp_order = ~0ULL;
	m->rx_attr->comp_order = FI_ORDER_NONE | FI_ORDER_DATA;
	m->tx_attr->tclass = 0xffffffff;
	m->ep_attr->type = (enum fi_ep_type)99;
	m->ep_attr->protocol = 0x80000001;
	m->ep_attr->mem_tag_format = ~0ULL;
	m->ep_attr->max_msg_size = SIZE_MAX;
	m->domain_attr->domain = (struct fid_domain *)(uintptr_t)0x7f00deadbeefULL;
	m->domain_attr->threading = (enum fi_threading)42;
	m->domain_attr->control_progress = (enum fi_progress)3;
	m->domain_attr->data_progress = (enum fi_progress)0x80000000;
	m->domain_attr->resource_mgmt = (enum fi_resource_mgmt)3;
	m->domain_attr->av_type = (enum fi_av_type)3;
	m->domain_attr->mr_mode = -1;
	m->fabric_attr->prov_version = 0xffffffff;
	m->fabric_attr->api_version = FI_VERSION(2, 0);
	show("INFO max", m, FI_TYPE_INFO);
	show("TX_ATTR max", m->tx_attr, FI_TYPE_TX_ATTR);
	show("RX_ATTR max", m->rx_attr, FI_TYPE_RX_ATTR);
	show("EP_ATTR max", m->ep_attr, FI_TYPE_EP_ATTR);
	show("DOMAIN_ATTR max", m->domain_attr, FI_TYPE_DOMAIN_ATTR);
	show("FABRIC_ATTR max", m->fabric_attr, FI_TYPE_FABRIC_ATTR);

	/* comp_order is special-cased: walk its interesting values. */
	const uint64_t co[] = {0, 1, 0x100, FI_ORDER_STRICT, FI_ORDER_DATA, FI_ORDER_DATA | 1,
			       FI_ORDER_STRICT | FI_ORDER_DATA, 0x100000000ULL, 0x1fe};
	for (size_t k = 0; k < sizeof co / sizeof *co; k++) {
		char label[64];
		z->tx_attr->comp_order = co[k];
		snprintf(label, sizeof label, "TX_ATTR comp_order %#llx", (unsigned long long)co[k]);
		show(label, z->tx_attr, FI_TYPE_TX_ATTR);
	}
	z->tx_attr->comp_order = 0;

	/* fi_info without sub-structures, and a list (only the head prints). */
	struct fi_info *bare = zalloc();
	show("INFO bare", bare, FI_TYPE_INFO);
	p->next = m;
	show("INFO full list", p, FI_TYPE_INFO);
	p->next = NULL;
}

/* ---- addresses ----------------------------------------------------------- */

static void show_addr(const char *label, struct fi_info *i)
{
	show(label, i, FI_TYPE_INFO);
}

static void dump_addrs(void)
{
	struct fi_info *i = new_info();
	static unsigned char pat[4][128];
	for (int k = 0; k < 128; k++) {
		pat[0][k] = (unsigned char)k;
		pat[1][k] = 0;
		pat[2][k] = 0xff;
		pat[3][k] = (unsigned char)(k * 7 + 1);
	}
	const char *pname[] = {"seq", "zero", "ff", "mix"};
	char label[96];
	for (uint32_t f = 0; f <= 17; f++) {
		if (f == FI_ADDR_BGQ || f == FI_ADDR_MLX || f == FI_ADDR_STR)
			continue;
		for (int k = 0; k < 4; k++) {
			i->addr_format = f;
			i->src_addr = pat[k];
			i->src_addrlen = 64;
			i->dest_addr = pat[(k + 1) % 4];
			i->dest_addrlen = 32;
			snprintf(label, sizeof label, "addr format %u %s", f, pname[k]);
			show_addr(label, i);
		}
	}
	/* Opaque formats print the pointer value; it is never dereferenced. */
	i->addr_format = FI_ADDR_BGQ;
	i->src_addr = (void *)(uintptr_t)0x1000;
	i->dest_addr = (void *)(uintptr_t)0xabcdef;
	show_addr("addr bgq", i);
	i->addr_format = FI_ADDR_MLX;
	show_addr("addr mlx", i);

	static char s1[] = "fi_sockaddr_in://10.0.0.1:4242";
	static char s2[] = "";
	i->addr_format = FI_ADDR_STR;
	i->src_addr = s1;
	i->src_addrlen = 3;
	i->dest_addr = s2;
	show_addr("addr str", i);

	/* Padded: FI_SOCKADDR_IB reads 48 bytes whatever the family says. */
	static union {
		struct sockaddr_in sa;
		unsigned char pad[128];
	} u4;
	static union {
		struct sockaddr_in6 sa;
		unsigned char pad[128];
	} u6;
	struct sockaddr_in sin = {0};
	struct sockaddr_in6 sin6 = {0};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(1234);
	inet_pton(AF_INET, "192.168.7.9", &sin.sin_addr);
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(65535);
	sin6.sin6_scope_id = 3;
	inet_pton(AF_INET6, "fe80::1:2:3", &sin6.sin6_addr);
	u4.sa = sin;
	u6.sa = sin6;
	for (uint32_t f = FI_FORMAT_UNSPEC; f <= FI_SOCKADDR_IB; f++) {
		i->addr_format = f;
		i->src_addr = &u4;
		i->src_addrlen = sizeof sin;
		i->dest_addr = &u6;
		i->dest_addrlen = sizeof sin6;
		snprintf(label, sizeof label, "addr sockaddr format %u", f);
		show_addr(label, i);
	}
	const int fams[] = {AF_UNIX, 27 /* AF_IB */, 0, AF_INET};
	for (size_t k = 0; k < sizeof fams / sizeof *fams; k++) {
		static union {
			struct sockaddr_in6 sa;
			unsigned char pad[128];
		} odd;
		odd.sa = sin6;
		odd.sa.sin6_family = (sa_family_t)fams[k];
		i->addr_format = FI_SOCKADDR;
		i->src_addr = &odd;
		i->dest_addr = NULL;
		snprintf(label, sizeof label, "addr sockaddr family %d", fams[k]);
		show_addr(label, i);
		i->addr_format = FI_SOCKADDR_IN6;
		snprintf(label, sizeof label, "addr sockaddr_in6 family %d", fams[k]);
		show_addr(label, i);
	}
	/* A sockaddr_ib with every field distinct. */
	static unsigned char ib[64];
	ib[0] = 27;
	ib[2] = 0x12;
	ib[3] = 0x34;
	ib[8] = 0xfe;
	ib[9] = 0x80;
	ib[23] = 1;
	for (int k = 0; k < 8; k++) {
		ib[24 + k] = (unsigned char)(0x11 * (k + 1));
		ib[32 + k] = (unsigned char)(0xf0 + k);
		ib[40 + k] = (unsigned char)(0x21 + k);
	}
	i->addr_format = FI_SOCKADDR_IB;
	i->src_addr = ib;
	show_addr("addr ib fields", i);
}

/* ---- fids and NICs -------------------------------------------------------- */

/* Appends like the library's own tostr methods do. */
static int append_tostr(const struct fid *fid, char *buf, size_t len)
{
	size_t n = strlen(buf);
	if (n < len)
		snprintf(buf + n, len - n, "    handle: <class %zu>\n", fid->fclass);
	return 0;
}

/* Writes from the start of what it is given. */
static int plain_tostr(const struct fid *fid, char *buf, size_t len)
{
	return snprintf(buf, len, "plain<%zu>", fid->fclass);
}

static struct fi_ops append_ops = {sizeof(struct fi_ops), 0, 0, 0, 0, append_tostr, 0};
static struct fi_ops plain_ops = {sizeof(struct fi_ops), 0, 0, 0, 0, plain_tostr, 0};

static struct fi_device_attr dev = {"mlx5_0", "0x1017", "0x0", "0x15b3", "mlx5_core",
				    "16.35.2000"};
static struct fi_link_attr link_up = {"fe80::1", 4096, 100000000000ULL, FI_LINK_UP,
				      "InfiniBand"};

static void sample_nic(struct fid_nic *n, struct fi_bus_attr *bus)
{
	memset(n, 0, sizeof *n);
	memset(bus, 0, sizeof *bus);
	n->fid.fclass = FI_CLASS_NIC;
	bus->bus_type = FI_BUS_PCI;
	bus->attr.pci.domain_id = 0x1a;
	bus->attr.pci.bus_id = 0x3b;
	bus->attr.pci.device_id = 0x1f;
	bus->attr.pci.function_id = 7;
	n->device_attr = &dev;
	n->bus_attr = bus;
	n->link_attr = &link_up;
}

struct seg_scan {
	uintptr_t base;
	uintptr_t text_lo[8], text_hi[8];
	int ntext;
	uintptr_t data_lo[16], data_hi[16];
	int ndata;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct seg_scan *s = arg;
	if (info->dlpi_addr != s->base)
		return 0;
	for (int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = s->base + ph->p_vaddr, hi = lo + ph->p_memsz;
		if ((ph->p_flags & PF_X) && s->ntext < 8) {
			s->text_lo[s->ntext] = lo;
			s->text_hi[s->ntext++] = hi;
		} else if ((ph->p_flags & PF_R) && !(ph->p_flags & PF_X) && s->ndata < 16) {
			s->data_lo[s->ndata] = lo;
			s->data_hi[s->ndata++] = hi;
		}
	}
	return 1;
}

static int in_text(const struct seg_scan *s, uintptr_t p)
{
	for (int k = 0; k < s->ntext; k++)
		if (p >= s->text_lo[k] && p < s->text_hi[k])
			return 1;
	return 0;
}

static int nic_ops_work(struct fi_ops *ops)
{
	static const char want[] = "    nic:\n        fi_device_attr:\n            name: mlx5_0\n";
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		/* Wrong candidates may crash; keep the library's backtrace quiet. */
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		struct fid_nic n;
		struct fi_bus_attr bus;
		char out[4096] = "";
		sample_nic(&n, &bus);
		n.fid.ops = ops;
		ops->tostr(&n.fid, out, sizeof out);
		_exit(strncmp(out, want, sizeof want - 1) == 0 ? 0 : 1);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A fid_nic only prints through its library's own fi_ops, which no public
 * call hands out without a provider that reports NICs.  Find that table in
 * the library's data: size == sizeof(struct fi_ops), code pointers inside
 * the library, and a tostr that renders a sample NIC. */
static struct fi_ops *find_nic_ops(void *handle)
{
	struct link_map *lm = NULL;
	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm)
		return NULL;
	struct seg_scan s = {.base = lm->l_addr};
	dl_iterate_phdr(phdr_cb, &s);
	for (int d = 0; d < s.ndata; d++) {
		for (uintptr_t p = (s.data_lo[d] + 7) & ~(uintptr_t)7;
		     p + sizeof(struct fi_ops) <= s.data_hi[d]; p += 8) {
			struct fi_ops *o = (struct fi_ops *)p;
			if (o->size != sizeof(struct fi_ops) || !o->tostr ||
			    !in_text(&s, (uintptr_t)o->tostr) ||
			    (o->close && !in_text(&s, (uintptr_t)o->close)))
				continue;
			if (nic_ops_work(o))
				return o;
		}
	}
	return NULL;
}

static void dump_fids(void *handle)
{
	struct fid f = {FI_CLASS_EP, NULL, &plain_ops};
	show("FID plain tostr", &f, FI_TYPE_FID);
	f.ops = &append_ops;
	show("FID appending tostr", &f, FI_TYPE_FID);

	struct fi_info *i = new_info();
	populate(i, 0);
	i->handle = &f;
	show("INFO handle with tostr", i, FI_TYPE_INFO);
	i->handle = NULL;

	/* Without the library's NIC ops (ours prints NICs without them too) a
	 * plain fid_nic is used; 1.17 would print its address instead. */
	struct fi_ops *nic_ops = find_nic_ops(handle);
	struct fid_nic n;
	struct fi_bus_attr bus;
	sample_nic(&n, &bus);
	n.fid.ops = nic_ops;
	i->nic = &n;
	show("INFO nic", i, FI_TYPE_INFO);
	show("FID nic", &n.fid, FI_TYPE_FID);

	struct fi_device_attr dev0 = {0};
	struct fi_bus_attr bus0 = {0};
	struct fi_link_attr link0 = {0};
	n.device_attr = &dev0;
	n.bus_attr = &bus0;
	n.link_attr = &link0;
	show("INFO nic zero", i, FI_TYPE_INFO);
	bus0.bus_type = (enum fi_bus_type)7;
	link0.state = (enum fi_link_state)9;
	show("INFO nic bad enums", i, FI_TYPE_INFO);
	bus0.bus_type = FI_BUS_PCI;
	bus0.attr.pci.domain_id = 0xffff;
	bus0.attr.pci.bus_id = 0xff;
	bus0.attr.pci.device_id = 0xff;
	bus0.attr.pci.function_id = 0xff;
	link0.state = FI_LINK_DOWN;
	link0.mtu = SIZE_MAX;
	n.prov_attr = &n;
	show("INFO nic pci max", i, FI_TYPE_INFO);
	trunc_scan("FID nic", &n.fid, FI_TYPE_FID, 400, 1);
}

/* ---- misc ---------------------------------------------------------------- */

static void dump_misc(void)
{
	uint64_t x = FI_MSG;
	for (int t = 0; t <= FI_TYPE_LOG_SUBSYS + 3; t++) {
		char label[64];
		snprintf(label, sizeof label, "NULL data type %d", t);
		show(label, NULL, t);
	}
	/* Past 1.17's last type; 2.0 numbers 29.. are kept out on purpose. */
	const int unknown[] = {64, 1000, -1};
	for (size_t k = 0; k < sizeof unknown / sizeof *unknown; k++) {
		char label[64];
		snprintf(label, sizeof label, "unknown type %d", unknown[k]);
		show(label, &x, unknown[k]);
	}
	char *a = p_tostr(&x, FI_TYPE_CAPS);
	char *b = p_tostr(&x, FI_TYPE_MODE);
	printf("== same buffer on one thread: %s\n", a == b ? "yes" : "no");

	char small[16] = "junk";
	printf("== tostr_r NULL buf: %s\n", p_tostr_r(NULL, 16, &x, FI_TYPE_CAPS) ? "ptr" : "NULL");
	printf("== tostr_r NULL data: %s [%s]\n",
	       p_tostr_r(small, sizeof small, NULL, FI_TYPE_CAPS) ? "ptr" : "NULL", small);
	printf("== tostr_r len 0: %s [%s]\n",
	       p_tostr_r(small, 0, &x, FI_TYPE_CAPS) ? "ptr" : "NULL", small);

	uint32_t v = FI_VERSION(1, 5);
	char *s = p_tostr(&v, FI_TYPE_VERSION);
	printf("VERSION: %s\n", s ? s : "NULL");

	/* fi_tostr's own buffer limit. */
	static char longname[12000];
	memset(longname, 'n', sizeof longname - 1);
	struct fi_info *i = new_info();
	i->domain_attr->name = longname;
	s = p_tostr(i, FI_TYPE_INFO);
	printf("== long name: strlen %zu tail [%s]\n", strlen(s), s + strlen(s) - 8);
	s = p_tostr(i->domain_attr, FI_TYPE_DOMAIN_ATTR);
	printf("== long name attr: strlen %zu\n", strlen(s));
}

static void dump_trunc(void)
{
	uint64_t caps = FI_MSG | FI_RMA | FI_TAGGED | FI_REMOTE_COMM;
	trunc_scan("CAPS", &caps, FI_TYPE_CAPS, 64, 1);
	uint64_t none = 0;
	trunc_scan("CAPS none", &none, FI_TYPE_CAPS, 4, 1);
	uint64_t of = FI_CLAIM | FI_DISCARD | FI_COMPLETION;
	trunc_scan("OP_FLAGS", &of, FI_TYPE_OP_FLAGS, 48, 1);
	uint32_t ep = FI_EP_SOCK_STREAM;
	trunc_scan("EP_TYPE", &ep, FI_TYPE_EP_TYPE, 24, 1);
	trunc_scan("unknown type", &ep, 777, 16, 1);

	struct fi_info *i = new_info();
	populate(i, 0);
	trunc_scan("TX_ATTR", i->tx_attr, FI_TYPE_TX_ATTR, 400, 1);
	trunc_scan("FABRIC_ATTR", i->fabric_attr, FI_TYPE_FABRIC_ATTR, 120, 1);
	/* Stop before the end of fi_domain_attr: 2.0 prints more fields there. */
	trunc_scan("DOMAIN_ATTR", i->domain_attr, FI_TYPE_DOMAIN_ATTR, 560, 1);

	static struct sockaddr_in sin;
	sin.sin_family = AF_INET;
	sin.sin_port = htons(7);
	inet_pton(AF_INET, "10.0.0.1", &sin.sin_addr);
	i->src_addr = &sin;
	/* The domain attributes are left out for the same 2.0 reason. */
	free(i->domain_attr);
	i->domain_attr = NULL;
	trunc_scan("INFO", i, FI_TYPE_INFO, 1500, 1);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s /path/to/libfabric.so.1\n", argv[0]);
		return 2;
	}
	/* DEEPBIND: the library's symbols win inside it even if another
	 * libfabric is already in the process. */
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	/* Binaries bind these versions; unversioned builds use plain names. */
	p_tostr = (tostr_fn)dlvsym(h, "fi_tostr", "FABRIC_1.0");
	if (!p_tostr)
		p_tostr = (tostr_fn)dlsym(h, "fi_tostr");
	p_tostr_r = (tostr_r_fn)dlvsym(h, "fi_tostr_r", "FABRIC_1.4");
	if (!p_tostr_r)
		p_tostr_r = (tostr_r_fn)dlsym(h, "fi_tostr_r");
	if (!p_tostr || !p_tostr_r) {
		fprintf(stderr, "%s: no fi_tostr/fi_tostr_r\n", argv[1]);
		return 1;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	dump_enums();
	dump_flags();
	dump_attrs();
	dump_addrs();
	dump_fids(h);
	dump_misc();
	dump_trunc();
	fflush(stdout);
	return 0;
}
