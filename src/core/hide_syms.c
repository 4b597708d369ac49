/* SPDX-License-Identifier: BSD-3-Clause */
/* hide_syms OBJECT: gives every defined global symbol of a relocatable ELF
 * object hidden visibility, in place.
 *
 * Embedded builds hand the parent one partial link of all our objects.
 * -fvisibility=hidden does not cover the template instantiations of
 * namespace std (libstdc++ declares it with default visibility), so without
 * this the parent's shared library would export them as weak symbols.
 * Hidden symbols still link within the parent; they just leave no trace in
 * its dynamic symbol table.  Undefined references (to libstdc++ and the C
 * library) keep their visibility. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "hide_syms: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0, r;
	do {
		if (n == cap) {
			cap = cap ? 2 * cap : 1 << 20;
			unsigned char *nb = realloc(buf, cap);
			if (!nb) {
				fprintf(stderr, "hide_syms: out of memory\n");
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "hide_syms: %s: read error\n", path);
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

/* One body for both ELF classes. */
#define HIDE(Ehdr, Shdr, Sym, ST_BIND, ST_INFO, ST_TYPE)                                   \
	do {                                                                                  \
		const Ehdr *eh = (const Ehdr *)buf;                                           \
		if (len < sizeof(*eh) || eh->e_type != ET_REL ||                              \
		    eh->e_shentsize != sizeof(Shdr) || eh->e_shoff > len ||                   \
		    (len - eh->e_shoff) / sizeof(Shdr) < eh->e_shnum) {                       \
			fprintf(stderr, "hide_syms: %s: not a relocatable object\n", path); \
			return -1;                                                            \
		}                                                                             \
		Shdr *sh = (Shdr *)(buf + eh->e_shoff);                                       \
		for (unsigned i = 0; i < eh->e_shnum; i++) {                                  \
			if (sh[i].sh_type != SHT_SYMTAB)                                      \
				continue;                                                     \
			if (sh[i].sh_entsize != sizeof(Sym) || sh[i].sh_offset > len ||       \
			    len - sh[i].sh_offset < sh[i].sh_size) {                          \
				fprintf(stderr, "hide_syms: %s: bad symbol table\n", path); \
				return -1;                                                    \
			}                                                                     \
			Sym *sym = (Sym *)(buf + sh[i].sh_offset);                            \
			size_t nsym = sh[i].sh_size / sizeof(Sym);                            \
			for (size_t k = sh[i].sh_info; k < nsym; k++) {                       \
				unsigned bind = ST_BIND(sym[k].st_info);                      \
				if (sym[k].st_shndx == SHN_UNDEF ||                           \
				    (bind != STB_GLOBAL && bind != STB_WEAK &&                \
				     bind != STB_GNU_UNIQUE))                                 \
					continue;                                             \
				/* Unique binding forces a dynamic symbol: weak is      \
				 * what -fno-gnu-unique would have emitted. */             \
				if (bind == STB_GNU_UNIQUE)                                   \
					sym[k].st_info = ST_INFO(STB_WEAK,                     \
								 ST_TYPE(sym[k].st_info));     \
				sym[k].st_other = (sym[k].st_other & ~3u) | STV_HIDDEN;       \
				(*hidden)++;                                                  \
			}                                                                     \
		}                                                                             \
	} while (0)

static int hide(const char *path, unsigned char *buf, size_t len, size_t *hidden)
{
	if (len < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG) != 0) {
		fprintf(stderr, "hide_syms: %s: not an ELF file\n", path);
		return -1;
	}
	const unsigned short one = 1;
	int little = *(const unsigned char *)&one == 1;
	if (buf[EI_DATA] != (little ? ELFDATA2LSB : ELFDATA2MSB)) {
		fprintf(stderr, "hide_syms: %s: foreign byte order\n", path);
		return -1;
	}
	if (buf[EI_CLASS] == ELFCLASS64)
		HIDE(Elf64_Ehdr, Elf64_Shdr, Elf64_Sym, ELF64_ST_BIND, ELF64_ST_INFO, ELF64_ST_TYPE);
	else if (buf[EI_CLASS] == ELFCLASS32)
		HIDE(Elf32_Ehdr, Elf32_Shdr, Elf32_Sym, ELF32_ST_BIND, ELF32_ST_INFO, ELF32_ST_TYPE);
	else {
		fprintf(stderr, "hide_syms: %s: unknown ELF class\n", path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: hide_syms OBJECT\n");
		return 2;
	}
	size_t len = 0, hidden = 0;
	unsigned char *buf = read_all(argv[1], &len);
	if (!buf)
		return 1;
	if (hide(argv[1], buf, len, &hidden) != 0) {
		free(buf);
		return 1;
	}
	/* Rewrite through a temporary so a failure leaves no half-written object. */
	size_t plen = strlen(argv[1]);
	char *tmp = malloc(plen + 5);
	if (!tmp) {
		free(buf);
		return 1;
	}
	memcpy(tmp, argv[1], plen);
	memcpy(tmp + plen, ".tmp", 5);
	FILE *f = fopen(tmp, "wb");
	int ok = f && fwrite(buf, 1, len, f) == len;
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok || rename(tmp, argv[1]) != 0) {
		fprintf(stderr, "hide_syms: %s: %s\n", tmp, strerror(errno));
		remove(tmp);
		free(buf);
		free(tmp);
		return 1;
	}
	free(buf);
	free(tmp);
	return hidden ? 0 : (fprintf(stderr, "hide_syms: %s: no defined symbols\n", argv[1]), 1);
}
