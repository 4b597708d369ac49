/* SPDX-License-Identifier: BSD-3-Clause */
/* A shrunken region is an error, not a SIGBUS (issue 32).  Any process of
 * our user may ftruncate() a region in /dev/shm, ours or a peer's; the
 * next touch of a lost page would kill us.  Objects opened by name cannot
 * be sealed against shrinking, and checking the size before each touch
 * would cost the hot path a system call, so instead every region mapping
 * is registered here and a SIGBUS handler, on a fault inside one, maps
 * zero-filled private memory over the whole mapping (mmap is
 * async-signal-safe) and raises that mapping's flag: the faulting access
 * then completes on the zeros, and the region's owner (region.h) reads the
 * flag where it matters -- a peer whose region shrank is dead (push fails,
 * alive() is false), our own region is reported and stays silent.  A fault
 * anywhere else goes to the handler that was there before us (or the
 * default action). */
#include "prov/shm/region_impl.h"

#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace wu::shm_tp {

namespace {

/* Enough for every region of a large node's endpoints; past it a mapping
 * is unguarded (as before), not refused. */
constexpr size_t max_guarded = 1 << 14;

struct guarded {
	std::atomic<uintptr_t> lo{0}; /* 0: free, 1: being filled */
	std::atomic<uintptr_t> hi{0};
	std::atomic<std::atomic<bool> *> flag{nullptr};
};
guarded table[max_guarded];
std::atomic<size_t> high{0}; /* slots at or past it were never used */
struct sigaction previous;
std::once_flag installed;

void on_bus(int sig, siginfo_t *si, void *uc)
{
	auto a = reinterpret_cast<uintptr_t>(si->si_addr);
	size_t n = high.load(std::memory_order_acquire);
	for (size_t i = 0; i < n; i++) {
		uintptr_t lo = table[i].lo.load(std::memory_order_acquire);
		if (lo <= 1 || a < lo || a >= table[i].hi.load(std::memory_order_relaxed))
			continue;
		uintptr_t hi = table[i].hi.load(std::memory_order_relaxed);
		if (mmap(reinterpret_cast<void *>(lo), hi - lo, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			break;
		if (std::atomic<bool> *f = table[i].flag.load(std::memory_order_relaxed))
			f->store(true, std::memory_order_relaxed);
		return;
	}
	if (previous.sa_flags & SA_SIGINFO) {
		if (previous.sa_sigaction) {
			previous.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
		return;
	}
	/* Not ours and nobody else's: the default action when the access
	 * runs again. */
	signal(SIGBUS, SIG_DFL);
}

void install() noexcept
{
	struct sigaction sa{};
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &previous);
}

} // namespace

void guard_add(const void *base, size_t size, std::atomic<bool> *broken) noexcept
{
	try {
		std::call_once(installed, install);
	} catch (...) {
		return;
	}
	auto lo = reinterpret_cast<uintptr_t>(base);
	for (size_t i = 0; i < max_guarded; i++) {
		uintptr_t free = 0;
		if (!table[i].lo.compare_exchange_strong(free, 1, std::memory_order_acquire))
			continue;
		table[i].hi.store(lo + size, std::memory_order_relaxed);
		table[i].flag.store(broken, std::memory_order_relaxed);
		table[i].lo.store(lo, std::memory_order_release);
		size_t h = high.load(std::memory_order_relaxed);
		while (h < i + 1 && !high.compare_exchange_weak(h, i + 1, std::memory_order_release)) {
		}
		return;
	}
}

void guard_remove(const void *base) noexcept
{
	auto lo = reinterpret_cast<uintptr_t>(base);
	size_t n = high.load(std::memory_order_acquire);
	for (size_t i = 0; i < n; i++) {
		if (table[i].lo.load(std::memory_order_relaxed) != lo)
			continue;
		table[i].flag.store(nullptr, std::memory_order_relaxed);
		table[i].hi.store(0, std::memory_order_relaxed);
		table[i].lo.store(0, std::memory_order_release);
		return;
	}
}

} // namespace wu::shm_tp
