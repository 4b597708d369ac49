/* SPDX-License-Identifier: BSD-3-Clause */
/* The floor for the tcp benchmarks: a plain TCP socket ping-pong and
 * stream over 127.0.0.1, no fabric library.  One process forks its peer.
 *
 *   raw_tcp pingpong SIZE ITERS   -> "raw_tcp pingpong SIZE usec_one_way MB/s"
 *   raw_tcp stream SIZE ITERS     -> "raw_tcp stream SIZE usec_per_msg MB/s"
 *   raw_tcp pingpong2 SIZE ITERS  -> the ping-pong with separate send and
 *                                    receive buffers, as fi_pingpong has
 *
 * Ping-pong: each side writes SIZE bytes and reads SIZE back, blocking,
 * TCP_NODELAY; one-way latency is half the round trip (fi_pingpong's
 * usec/xfer is measured the same way).  Stream: the client writes ITERS
 * messages back to back, the server acknowledges the last one.
 *
 * Both sockets get the options the tcp provider gives its connections, so
 * the floor is measured on equal terms: TCP_NODELAY, FI_TCP_SOCKBUF (0 or
 * unset: autotuning) and FI_TCP_LOCAL_CC (unset: reno, as the provider
 * uses for same-host peers; empty: the system's default). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void xfer(int fd, char *buf, size_t n, int out)
{
	while (n) {
		/* Receives spin (MSG_DONTWAIT) like a provider polling its CQ:
		 * a blocking read would measure the scheduler's wake-up instead. */
		ssize_t r = out ? write(fd, buf, n) : recv(fd, buf, n, MSG_DONTWAIT);
		if (r < 0 && !out && (errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (r <= 0)
			die(out ? "write" : "read");
		buf += r;
		n -= (size_t)r;
	}
}

static void tune(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	const char *sb = getenv("FI_TCP_SOCKBUF");
	int sz = sb ? atoi(sb) : 0;
	if (sz > 0) {
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	}
	const char *cc = getenv("FI_TCP_LOCAL_CC");
	if (!cc)
		cc = "reno";
	if (*cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)))
		perror("setsockopt(TCP_CONGESTION)");
}

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "pingpong") && strcmp(argv[1], "pingpong2") && strcmp(argv[1], "stream"))) {
		fprintf(stderr, "usage: raw_tcp pingpong|pingpong2|stream SIZE ITERS\n");
		return 2;
	}
	int stream = !strcmp(argv[1], "stream");
	size_t size = strtoull(argv[2], NULL, 0);
	long iters = strtol(argv[3], NULL, 0);
	char *buf = malloc(size ? size : 1);
	char *rbuf = strcmp(argv[1], "pingpong2") ? buf : malloc(size ? size : 1);
	if (!buf || !rbuf)
		die("malloc");
	memset(buf, 'x', size);
	memset(rbuf, 'y', size);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof a;
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al))
		die("listen");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) { /* server */
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept");
		tune(fd);
		char ack = 0;
		for (long i = 0; i < iters + (stream ? 0 : 10); i++) {
			xfer(fd, rbuf, size, 0);
			if (!stream)
				xfer(fd, buf, size, 1);
		}
		if (stream)
			xfer(fd, &ack, 1, 1);
		_exit(0);
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a))
		die("connect");
	tune(fd);
	double t0 = 0;
	if (stream) {
		t0 = now_us();
		for (long i = 0; i < iters; i++)
			xfer(fd, buf, size, 1);
		char ack;
		xfer(fd, &ack, 1, 0);
	} else {
		for (long i = 0; i < iters + 10; i++) {
			if (i == 10)
				t0 = now_us(); /* ten warm-up rounds */
			xfer(fd, buf, size, 1);
			xfer(fd, rbuf, size, 0);
		}
	}
	double us = now_us() - t0;
	int st;
	waitpid(pid, &st, 0);
	double per = stream ? us / iters : us / iters / 2;
	printf("raw_tcp %s %zu %.2f %.2f\n", argv[1], size, per, size / per);
	return 0;
}
