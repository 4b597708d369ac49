/* SPDX-License-Identifier: BSD-3-Clause */
/* An owned file descriptor: closed when reset, replaced or destroyed, so a
 * socket, timerfd or epoll fd has one owner and no close() pairs to keep in
 * step on every error path.  It reads as its number (system calls take it as
 * they took the int); ownership moves only by release() or a move. */
#ifndef WU_CORE_FD_H
#define WU_CORE_FD_H

#include <unistd.h>

#include <utility>

namespace wu {

class unique_fd {
public:
	unique_fd() noexcept = default;
	explicit unique_fd(int fd) noexcept : fd_(fd) {}
	unique_fd(unique_fd &&o) noexcept : fd_(o.release()) {}
	unique_fd &operator=(unique_fd &&o) noexcept
	{
		if (this != &o)
			reset(o.release());
		return *this;
	}
	unique_fd(const unique_fd &) = delete;
	unique_fd &operator=(const unique_fd &) = delete;
	~unique_fd() { reset(); }

	int get() const noexcept { return fd_; }
	operator int() const noexcept { return fd_; }
	/* Gives the fd up without closing it. */
	int release() noexcept { return std::exchange(fd_, -1); }
	/* Closes the fd held (if any) and takes fd. */
	void reset(int fd = -1) noexcept
	{
		if (fd_ >= 0 && fd_ != fd)
			::close(fd_);
		fd_ = fd;
	}

private:
	int fd_ = -1;
};

} // namespace wu

#endif
