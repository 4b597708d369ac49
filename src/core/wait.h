/* SPDX-License-Identifier: BSD-3-Clause */
/* Native wait objects and closed handles, shared by event queues, wait sets,
 * completion queues and counters: the eventfd and mutex+cond pair handed out
 * by FI_GETWAIT, the FI_GETWAIT / FI_GETWAITOBJ control and the ops of a
 * closed handle (the shell that outlives fi_close: core/shell.h). */
#ifndef WU_CORE_WAIT_H
#define WU_CORE_WAIT_H

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "core/log.h"
#include "core/shell.h"
#include "core/sync.h"

namespace wu::waitobj {

inline void eventfd_set(int fd) noexcept
{
	uint64_t one = 1;
	ssize_t r = write(fd, &one, sizeof one);
	(void)r; /* fails only when the counter is saturated: still readable */
}

inline void eventfd_drain(int fd) noexcept
{
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof v);
	(void)r; /* EAGAIN: already clear */
}

/* A non-blocking eventfd, or -errno. */
inline int make_eventfd() noexcept
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A pthread mutex + cond pair handed out by FI_GETWAIT. */
struct mutex_cond {
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	void broadcast() noexcept
	{
		pthread_mutex_lock(&m);
		pthread_cond_broadcast(&c);
		pthread_mutex_unlock(&m);
	}
	~mutex_cond()
	{
		pthread_cond_destroy(&c);
		pthread_mutex_destroy(&m);
	}
};

/* How fi_control's messages name the object. */
struct names {
	fi_log_subsys subsys;
	const char *a_what;  /* "an EQ": "fi_control on an EQ: arg is NULL" */
	const char *what;    /* "EQ": "this EQ has no native wait object" */
	const char *by;      /* "EQs": "not supported by EQs" */
	bool pollfd;	     /* FI_WAIT_POLLFD can be handed out */
};

/* FI_GETWAITOBJ and FI_GETWAIT for an object waiting with obj on efd or mc.
 * expose(owner), when given, runs before the eventfd is handed out. */
inline int control(int command, void *arg, const names &n, fi_wait_obj obj, int efd,
		   mutex_cond *mc, void (*expose)(void *), void *owner) noexcept
{
	if (!arg) {
		WU_WARN(&core_prov, n.subsys, "fi_control on %s: arg is NULL\n", n.a_what);
		return -FI_EINVAL;
	}
	switch (command) {
	case FI_GETWAITOBJ:
		*static_cast<fi_wait_obj *>(arg) = obj;
		return 0;
	case FI_GETWAIT:
		if (obj == FI_WAIT_FD) {
			if (expose)
				expose(owner);
			*static_cast<int *>(arg) = efd;
			return 0;
		}
		if (obj == FI_WAIT_POLLFD && n.pollfd) {
			auto *p = static_cast<fi_wait_pollfd *>(arg);
			size_t room = p->nfds;
			p->nfds = 1;
			p->change_index = 1;
			if (room < 1 || !p->fd)
				return -FI_ETOOSMALL;
			if (expose)
				expose(owner);
			p->fd[0].fd = efd;
			p->fd[0].events = POLLIN;
			p->fd[0].revents = 0;
			return 0;
		}
		if (obj == FI_WAIT_MUTEX_COND) {
			auto *out = static_cast<fi_mutex_cond *>(arg);
			out->mutex = &mc->m;
			out->cond = &mc->c;
			return 0;
		}
		WU_INFO(&core_prov, n.subsys, "FI_GETWAIT: this %s has no native wait object (wait_obj %d)%s\n",
			n.what, static_cast<int>(obj),
			n.pollfd ? "; open it with FI_WAIT_FD, FI_WAIT_POLLFD or FI_WAIT_MUTEX_COND" : "");
		return -FI_ENODATA;
	default:
		WU_INFO(&core_prov, n.subsys, "fi_control command %d is not supported by %s\n", command,
			n.by);
		return -FI_ENOSYS;
	}
}

/* The ops of a closed handle: every call logs Closed::warning under
 * Closed::subsys and fails with -FI_EBADF (a uint64_t result is 0 when
 * Closed::zero_u64).  Use as &badf<Closed, decltype(ops_type::slot)>::fn. */
template <class Closed, class Sig>
struct badf;
template <class Closed, class R, class... A>
struct badf<Closed, R (*)(A...)> {
	static R fn(A...) noexcept
	{
		WU_WARN(&core_prov, Closed::subsys, "%s", Closed::warning);
		if constexpr (Closed::zero_u64 && std::is_same_v<R, uint64_t>)
			return 0;
		else
			return static_cast<R>(-FI_EBADF);
	}
};

/* The fi_ops of a closed handle: every slot is badf<Closed>. */
template <class Closed>
constexpr fi_ops dead_fi_ops()
{
	return {sizeof(fi_ops),
		&badf<Closed, decltype(fi_ops::close)>::fn,
		&badf<Closed, decltype(fi_ops::bind)>::fn,
		&badf<Closed, decltype(fi_ops::control)>::fn,
		&badf<Closed, decltype(fi_ops::ops_open)>::fn,
		&badf<Closed, decltype(fi_ops::tostr)>::fn,
		&badf<Closed, decltype(fi_ops::ops_set)>::fn};
}

/* A closed queue's strerror: Closed::text. */
template <class Closed, class Fid>
const char *dead_strerror(Fid *, int, const void *, char *buf, size_t len)
{
	if (buf && len) {
		snprintf(buf, len, "%s", Closed::text);
		return buf;
	}
	return Closed::text;
}

/* fi_eq_strerror / fi_cq_strerror: our provider errnos are FI_E* values. */
inline const char *queue_strerror(int prov_errno, char *buf, size_t len) noexcept
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

} // namespace wu::waitobj

#endif
