/* SPDX-License-Identifier: BSD-3-Clause */
/* The open/close shell of queue objects (EQs, wait sets, CQs, counters, poll
 * sets).  The application's fid points at a small shell; the shell points
 * at the object (impl).  fi_close retires the shell: its ops become the
 * closed handle's (every call -FI_EBADF), the impl is destroyed (with the
 * parent reference it holds) and the shell is quarantined, so that a call
 * on the closed handle reads valid memory.  One copy of that sequence, and
 * the only place that frees a shell. */
#ifndef WU_CORE_SHELL_H
#define WU_CORE_SHELL_H

#include <cstddef>
#include <memory>

#include <rdma/fabric.h>

#include "core/fid.h"
#include "core/sync.h"

namespace wu::waitobj {

/* Closed shells stay readable memory (their ops return -FI_EBADF) for the
 * next Max closes, so calls on a closed handle fail cleanly. */
template <class Shell, size_t Max>
struct graveyard {
	eqd::spinlock lk;
	Shell *head = nullptr;
	Shell *tail = nullptr;
	size_t n = 0;

	/* Takes the shell (from std::unique_ptr::release or retire()). */
	void bury(Shell *s) noexcept
	{
		std::unique_ptr<Shell> evict;
		{
			eqd::lock_guard g(lk);
			s->next_dead = nullptr;
			if (tail)
				tail->next_dead = s;
			else
				head = s;
			tail = s;
			if (++n > Max) {
				evict.reset(head);
				head = head->next_dead;
				n--;
			}
		}
	}
};

/* What the application's fid points at: Fid first (container_of_fid). */
template <class Fid, class Impl>
struct shell {
	Fid fid;
	Impl *impl;
	shell *next_dead;
};

/* Opens: a new shell of class fclass with the given ops and context takes
 * impl (whose `shell` member learns it); returns the fid to hand out. */
template <class Fid, class Impl, class Ops>
Fid *publish(std::unique_ptr<Impl> impl, size_t fclass, void *context, fi_ops *fi, Ops *ops)
{
	auto sh = std::make_unique<shell<Fid, Impl>>();
	set_fid(sh->fid.fid, fclass, context, fi);
	sh->fid.ops = ops;
	sh->impl = impl.get();
	impl->shell = sh.get();
	impl.release();
	return &sh.release()->fid;
}

/* Closes: the shell gets the closed handle's ops, its impl is destroyed
 * and the shell goes to the graveyard g. */
template <class Fid, class Impl, class Ops, size_t Max>
void retire(shell<Fid, Impl> *sh, graveyard<shell<Fid, Impl>, Max> &g, fi_ops *dead_fi, Ops *dead_ops) noexcept
{
	sh->fid.fid.ops = dead_fi;
	sh->fid.ops = dead_ops;
	std::unique_ptr<Impl> gone(sh->impl);
	sh->impl = nullptr;
	gone.reset();
	g.bury(sh);
}

} // namespace wu::waitobj

#endif
