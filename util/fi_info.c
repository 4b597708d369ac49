/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fi_info: show what fi_getinfo() finds, which providers are loaded and
 * which environment variables the library reads.
 *
 * The options, the output layout, the messages and the exit codes are those
 * of the fi_info shipped in Debian's libfabric-bin, so that scripts written
 * for that tool keep working and the two can be diffed line by line on the
 * same library (test/util/fi_info_compare.sh does that).  Plain C99 plus the
 * GNU getopt_long/strcasestr; it only uses the public C ABI.
 */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>

/*
 * We ask for the 1.17 interface, not our headers' 2.0: that is what
 * Debian's tool asks for (the api_version the library reports back shows up
 * in -v output), and it keeps the tool usable on a 1.17 libfabric.so.1,
 * which refuses versions newer than its own.
 */
#define TOOL_API_VERSION FI_VERSION(1, 17)

/* Wireup's release (configure.ac's AC_INIT), the last --version line. */
#ifdef PACKAGE_VERSION
#define TOOL_VERSION PACKAGE_VERSION
#else
#define TOOL_VERSION "unknown"
#endif

/* fi_tostr_r() buffer for one -v entry; longer dumps are cut off as the
 * library truncates them, the same as Debian's tool (which uses this size). */
#define DUMP_BUF_SIZE 8192

struct named_value {
	const char *name;
	uint64_t value;
};

#define NAMED(x) { #x, (uint64_t)(x) }
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The names each option accepts (compared ignoring case).  The lists are
 * those Debian's tool accepts; names newer than 1.17 are left out on purpose
 * so that a hint given here means the same thing to both tools. */
static const struct named_value cap_names[] = {
	NAMED(FI_MSG), NAMED(FI_RMA), NAMED(FI_TAGGED), NAMED(FI_ATOMIC),
	NAMED(FI_MULTICAST), NAMED(FI_COLLECTIVE), NAMED(FI_READ),
	NAMED(FI_WRITE), NAMED(FI_RECV), NAMED(FI_SEND),
	NAMED(FI_REMOTE_READ), NAMED(FI_REMOTE_WRITE), NAMED(FI_MULTI_RECV),
	NAMED(FI_REMOTE_CQ_DATA), NAMED(FI_MORE), NAMED(FI_PEEK),
	NAMED(FI_TRIGGER), NAMED(FI_FENCE), NAMED(FI_SOURCE_ERR),
	NAMED(FI_LOCAL_COMM), NAMED(FI_REMOTE_COMM), NAMED(FI_SHARED_AV),
	NAMED(FI_RMA_EVENT), NAMED(FI_SOURCE), NAMED(FI_NAMED_RX_CTX),
	NAMED(FI_DIRECTED_RECV), NAMED(FI_HMEM),
};

static const struct named_value mode_names[] = {
	NAMED(FI_CONTEXT), NAMED(FI_MSG_PREFIX), NAMED(FI_ASYNC_IOV),
	NAMED(FI_RX_CQ_DATA), NAMED(FI_LOCAL_MR), NAMED(FI_NOTIFY_FLAGS_ONLY),
	NAMED(FI_RESTRICTED_COMP), NAMED(FI_CONTEXT2),
};

static const struct named_value ep_type_names[] = {
	NAMED(FI_EP_UNSPEC), NAMED(FI_EP_MSG), NAMED(FI_EP_DGRAM),
	NAMED(FI_EP_RDM), NAMED(FI_EP_SOCK_STREAM), NAMED(FI_EP_SOCK_DGRAM),
};

static const struct named_value addr_format_names[] = {
	NAMED(FI_FORMAT_UNSPEC), NAMED(FI_SOCKADDR), NAMED(FI_SOCKADDR_IN),
	NAMED(FI_SOCKADDR_IN6), NAMED(FI_SOCKADDR_IB), NAMED(FI_ADDR_PSMX),
	NAMED(FI_ADDR_GNI), NAMED(FI_ADDR_BGQ), NAMED(FI_ADDR_MLX),
	NAMED(FI_ADDR_STR), NAMED(FI_ADDR_PSMX2), NAMED(FI_ADDR_EFA),
};

/* getopt value of the one option without a short form */
#define OPT_VERSION 0x100

/*
 * One table drives both getopt_long and the help text.  The order is the
 * help order, and also decides how glibc lists the candidates of an
 * ambiguous abbreviation ("--v": '--verbose' '--version').  The help
 * columns are tab-separated exactly as Debian's tool prints them; --info
 * shows no value name there, which we keep for identical output.
 */
static const struct tool_option {
	int key;
	const char *name;
	const char *value_name; /* NULL: takes no value */
	const char *help;
} tool_options[] = {
	{ 'h', "help",        NULL,          "\t\t\tdisplay this help and exit" },
	{ 's', "src_addr",    "ADDR",        "\t\tsource name or address" },
	{ 'n', "node",        "NAME",        "\t\tdest node name or address" },
	{ 'P', "port",        "PNUM",        "\t\tport number" },
	{ 'c', "caps",        "CAP1|CAP2..", "\tone or more capabilities: FI_MSG|FI_RMA..." },
	{ 'm', "mode",        "MOD1|MOD2..", "\tone or more modes, default all modes" },
	{ 't', "ep_type",     "EPTYPE",      "\t\tspecify single endpoint type: FI_EP_MSG, FI_EP_DGRAM..." },
	{ 'd', "domain",      "DOMAIN",      "\t\tspecify the domain name" },
	{ 'f', "fabric",      "FABRIC",      "\t\tspecify the fabric name" },
	{ 'a', "addr_format", "FMT",         "\t\tspecify accepted address format: FI_FORMAT_UNSPEC, FI_SOCKADDR..." },
	{ 'p', "provider",    "PROV",        "\t\tspecify provider explicitly" },
	{ 'e', "env",         NULL,          "\t\t\tprint libfabric environment variables" },
	{ 'g', "getenv",      "SUBSTR",      "\t\tprint libfabric environment variables with substr" },
	{ 'i', "info",        "",            "\t\tprint fi_info structures containing substr" },
	{ 'l', "list",        NULL,          "\t\t\tlist available libfabric providers" },
	{ 'v', "verbose",     NULL,          "\t\t\tverbose output" },
	{ OPT_VERSION, "version", NULL,      "\t\t\tprint version info and exit" },
};

#define NUM_OPTIONS COUNT(tool_options)

static void usage(const char *prog)
{
	size_t i;

	printf("Usage: %s\n", prog);
	for (i = 0; i < NUM_OPTIONS; i++) {
		const struct tool_option *o = &tool_options[i];

		if (o->key == OPT_VERSION)
			printf("  --%s%s\n", o->name, o->help);
		else if (o->value_name)
			printf("  -%c, --%s=%s%s\n", o->key, o->name,
			       o->value_name, o->help);
		else
			printf("  -%c, --%s%s\n", o->key, o->name, o->help);
	}
}

static void build_getopt_tables(struct option *longopts, char *shortopts)
{
	size_t i;
	char *s = shortopts;

	for (i = 0; i < NUM_OPTIONS; i++) {
		const struct tool_option *o = &tool_options[i];

		longopts[i].name = o->name;
		longopts[i].has_arg = o->value_name ? required_argument : no_argument;
		longopts[i].flag = NULL;
		longopts[i].val = o->key;
		if (o->key < 0x100) {
			*s++ = (char)o->key;
			if (o->value_name)
				*s++ = ':';
		}
	}
	*s = '\0';
	memset(&longopts[NUM_OPTIONS], 0, sizeof(longopts[0]));
}

static const struct named_value *find_name(const struct named_value *table,
					   size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcasecmp(table[i].name, name))
			return &table[i];
	return NULL;
}

/* "A|B|C" -> bits ORed into *bits.  Empty pieces are skipped; the first
 * unknown piece is reported.  Cuts arg up in place. */
static int parse_bits(const struct named_value *table, size_t n, char *arg,
		      const char *what, uint64_t *bits)
{
	char *piece;

	for (piece = strtok(arg, "|"); piece; piece = strtok(NULL, "|")) {
		const struct named_value *nv = find_name(table, n, piece);

		if (!nv) {
			fprintf(stderr, "error: Unrecognized %s: %s\n", what, piece);
			return -EINVAL;
		}
		*bits |= nv->value;
	}
	return 0;
}

static int parse_one(const struct named_value *table, size_t n,
		     const char *arg, const char *what, uint64_t *value)
{
	const struct named_value *nv = find_name(table, n, arg);

	if (!nv) {
		fprintf(stderr, "error: Unrecognized %s: %s\n", what, arg);
		return -EINVAL;
	}
	*value = nv->value;
	return 0;
}

/* Replace a string hint, dropping the one given by an earlier option. */
static int set_string(char **field, const char *arg)
{
	char *copy = strdup(arg);

	if (!copy)
		return -ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

static const char *param_type_name(enum fi_param_type type)
{
	switch (type) {
	case FI_PARAM_STRING:
		return "String";
	case FI_PARAM_INT:
		return "Integer";
	case FI_PARAM_BOOL:
		return "Boolean (0/1, on/off, true/false, yes/no)";
	case FI_PARAM_SIZE_T:
		return "size_t";
	default:
		return "Unknown";
	}
}

static int print_params(const char *filter)
{
	struct fi_param *params = NULL;
	int count = 0, i, ret;

	/* A failure shows only in the exit code, as with Debian's tool. */
	ret = fi_getparams(&params, &count);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		const struct fi_param *p = &params[i];

		/* -g matches the variable's name only, not its help. */
		if (filter && !strcasestr(p->name, filter))
			continue;
		printf("# %s: %s\n", p->name, param_type_name(p->type));
		printf("# %s\n", p->help_string);
		if (p->value) {
			/* Quoted only when it has a space; otherwise the
			 * "quote" is a NUL byte, as Debian's tool prints it. */
			char q = strchr(p->value, ' ') ? '"' : '\0';

			printf("%s=%c%s%c\n", p->name, q, p->value, q);
		}
		putchar('\n');
	}
	fi_freeparams(params);
	return 0;
}

static void print_verbose(const struct fi_info *info, const char *filter)
{
	char buf[DUMP_BUF_SIZE];

	for (; info; info = info->next) {
		/* -i filters on the whole dump, so render it first. */
		fi_tostr_r(buf, sizeof(buf), info, FI_TYPE_INFO);
		if (filter && !strcasestr(buf, filter))
			continue;
		puts("---");
		fputs(buf, stdout);
	}
}

static void print_providers(const struct fi_info *info)
{
	for (; info; info = info->next) {
		printf("%s:\n", info->fabric_attr->prov_name);
		printf("    version: %d.%d\n",
		       (int)FI_MAJOR(info->fabric_attr->prov_version),
		       (int)FI_MINOR(info->fabric_attr->prov_version));
	}
}

static void print_summary(const struct fi_info *info)
{
	for (; info; info = info->next) {
		printf("provider: %s\n", info->fabric_attr->prov_name);
		printf("    fabric: %s\n", info->fabric_attr->name);
		printf("    domain: %s\n", info->domain_attr->name);
		printf("    version: %d.%d\n",
		       (int)FI_MAJOR(info->fabric_attr->prov_version),
		       (int)FI_MINOR(info->fabric_attr->prov_version));
		/* fi_tostr() reuses one buffer: one call per printf. */
		printf("    type: %s\n",
		       fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE));
		printf("    protocol: %s\n",
		       fi_tostr(&info->ep_attr->protocol, FI_TYPE_PROTOCOL));
	}
}

static void print_version(const char *prog)
{
	uint32_t api = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

	/* libfabric's tool prints its release and the API of the headers it
	 * was built with; this one is built with ours, so the release it
	 * stands in for is that API's.  Wireup's own release follows. */
	printf("%s: %d.%d.0\n", prog, FI_MAJOR_VERSION, FI_MINOR_VERSION);
	/* FI_TYPE_VERSION renders the library's own version (it only needs
	 * a non-NULL argument). */
	printf("libfabric: %s\n", fi_tostr(&api, FI_TYPE_VERSION));
	printf("libfabric api: %d.%d\n", FI_MAJOR_VERSION, FI_MINOR_VERSION);
	printf("wireup: %s\n", TOOL_VERSION);
}

int main(int argc, char **argv)
{
	struct option longopts[NUM_OPTIONS + 1];
	char shortopts[2 * NUM_OPTIONS + 1];
	struct fi_info *hints, *info = NULL;
	const char *node = NULL, *service = NULL, *filter = NULL;
	uint64_t flags = 0, value;
	int use_hints = 0, env = 0, verbose = 0, list = 0;
	int op, ret = 0;

	hints = fi_allocinfo();
	if (!hints)
		return EXIT_FAILURE;
	/* With hints, accept every mode and every MR mode bit unless -m
	 * narrows the modes: we list what exists, not what an application
	 * with particular limits could use. */
	hints->mode = ~0ULL;
	hints->domain_attr->mode = ~0ULL;
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);

	build_getopt_tables(longopts, shortopts);
	while ((op = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (op) {
		case 's':
			/* -s and -n share one address; -s makes it ours. */
			node = optarg;
			flags |= FI_SOURCE;
			break;
		case 'n':
			node = optarg;
			break;
		case 'P':
			service = optarg;
			break;
		case 'c':
			ret = parse_bits(cap_names, COUNT(cap_names), optarg,
					 "capability", &hints->caps);
			use_hints = 1;
			break;
		case 'm':
			/* each -m replaces the mode set, starting from none */
			hints->mode = 0;
			ret = parse_bits(mode_names, COUNT(mode_names), optarg,
					 "mode", &hints->mode);
			use_hints = 1;
			break;
		case 't':
			ret = parse_one(ep_type_names, COUNT(ep_type_names),
					optarg, "endpoint type", &value);
			if (!ret)
				hints->ep_attr->type = (enum fi_ep_type)value;
			use_hints = 1;
			break;
		case 'a':
			ret = parse_one(addr_format_names,
					COUNT(addr_format_names), optarg,
					"address format", &value);
			if (!ret)
				hints->addr_format = (uint32_t)value;
			use_hints = 1;
			break;
		case 'd':
			ret = set_string(&hints->domain_attr->name, optarg);
			use_hints = 1;
			break;
		case 'f':
			ret = set_string(&hints->fabric_attr->name, optarg);
			use_hints = 1;
			break;
		case 'p':
			ret = set_string(&hints->fabric_attr->prov_name, optarg);
			use_hints = 1;
			break;
		case 'e':
			env = 1;
			break;
		case 'g':
			env = 1;
			filter = optarg;
			break;
		case 'i':
			verbose = 1;
			filter = optarg;
			break;
		case 'l':
			list = 1;
			flags |= FI_PROV_ATTR_ONLY;
			break;
		case 'v':
			verbose = 1;
			break;
		case OPT_VERSION:
			print_version(argv[0]);
			fi_freeinfo(hints);
			return EXIT_SUCCESS;
		case 'h':
		default:
			/* getopt_long has already said what was wrong */
			usage(argv[0]);
			fi_freeinfo(hints);
			return EXIT_FAILURE;
		}
		if (ret) {
			fi_freeinfo(hints);
			return -ret;
		}
	}

	/* Also for -e: the providers must be loaded for their variables to
	 * be registered. */
	ret = fi_getinfo(TOOL_API_VERSION, node, service, flags,
			 use_hints ? hints : NULL, &info);
	if (ret) {
		fprintf(stderr, "fi_getinfo: %d\n", ret);
		fi_freeinfo(hints);
		return -ret;
	}

	if (env)
		ret = print_params(filter);
	else if (verbose)
		print_verbose(info, filter);
	else if (list)
		print_providers(info);
	else
		print_summary(info);

	fi_freeinfo(info);
	fi_freeinfo(hints);
	return -ret;
}
