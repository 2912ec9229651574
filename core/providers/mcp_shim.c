/* The per-agent agent-tool process: a stdio MCP server in about 1 MB.
 *
 * Usage: sb-mcp-shim SOCKET PYTHON -m navigator.cli mcp
 *
 * The agent's CLI starts this as its stdio MCP server. It forwards every line
 * of stdin, one at a time, to the host's agent-tool server on the private unix
 * socket SOCKET and copies that server's one-line answer to stdout (an empty
 * answer line means "no reply": a notification). The first line on each
 * connection is {"env": {...}}: this process's whole environment, which holds
 * the agent's capability; the host server runs each tool call with exactly
 * that environment and checks the capability as `switchboard mcp` always did.
 *
 * No host server answering: start one (PYTHON -OO -m core.memory.mcp_host
 * SOCKET, detached in its own session so it is nobody's child), then retry.
 * A connection lost before the answer: reconnect (starting the server again)
 * and send the same line again, a few times. When nothing works, exec the rest
 * of argv (`switchboard mcp`, the full in-process server) so the agent keeps
 * its tools; the line in flight and any read after it are handed to that server
 * (an unlinked file named by SWITCHBOARD_MCP_REPLAY_FD) and answered there; the
 * lines already answered are not replayed, the client goes on.
 * The argv keeps `navigator.cli mcp` on this process's command line: the
 * UserPromptSubmit wait of a Claude launch finds its server by it (pgrep -f).
 *
 * The socket is used only in a folder of this user's own with mode 0700 (not a
 * link), and only when the process listening on it is this user's: another user who
 * made the folder first (a shared $TMPDIR) could otherwise swap the socket and
 * receive the environment. Either check failing: say so on stderr, exec the rest.
 *
 * Oversized lines (> 4 MiB) get the same JSON-RPC error as the Python server
 * and are never buffered whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINE (4 * 1024 * 1024)
#define ATTEMPTS 4
#define START_WAIT_MS 15000

extern char **environ;

static char *sock_path;
static char **fallback_argv;
static int conn = -1;

struct buf { char *data; size_t len, cap; };

static void put(struct buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) { perror("switchboard mcp shim"); exit(70); }
        b->data = p; b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

static void put_json_string(struct buf *b, const char *s) {
    put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') { esc[0] = '\\'; esc[1] = (char)*p; put(b, esc, 2); }
        else if (*p < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", *p); put(b, esc, 6); }
        else put(b, (const char *)p, 1);
    }
    put(b, "\"", 1);
}

static int write_all(int fd, const char *s, size_t n) {
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0) { if (errno == EINTR) continue; return -1; }
        s += w; n -= (size_t)w;
    }
    return 0;
}

static void sleep_ms(long ms) {
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

static void give_up(void);

/* Whether sock_path's folder is this user's own, mode 0700, and not a link. */
static int private_folder(void) {
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    strncpy(dir, sock_path, sizeof dir - 1);
    dir[sizeof dir - 1] = 0;
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    struct stat st;
    if (lstat(dir, &st) < 0) return 0;
    return S_ISDIR(st.st_mode) && st.st_uid == getuid() && !(st.st_mode & 077);
}

/* Whether the process listening at the other end of fd runs as this user. */
static int same_user_peer(int fd) {
#ifdef SO_PEERCRED
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) return 0;
    return cred.uid == getuid();
#else
    uid_t uid;
    gid_t gid;
    if (getpeereid(fd, &uid, &gid) < 0) return 0;
    return uid == getuid();
#endif
}

static void refuse(const char *why) {
    fprintf(stderr, "switchboard mcp shim: %s %s; using the full server instead (remove "
            "that folder so Switchboard can make its own)\n", sock_path, why);
    give_up();
}

static int try_connect(void) {
    if (!private_folder()) refuse("is not in a private folder of this user (owner, mode 0700)");
    struct sockaddr_un addr;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, sock_path, sizeof addr.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) { close(fd); return -1; }
    if (!same_user_peer(fd)) { close(fd); refuse("is served by another user"); }
    return fd;
}

/* The host server, detached: its own session, stdio on /dev/null, reparented to init. */
static void start_host(void) {
    pid_t pid = fork();
    if (pid < 0) return;
    if (pid == 0) {
        setsid();
        if (fork() != 0) _exit(0);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) { dup2(null, 0); dup2(null, 1); dup2(null, 2); }
        char *argv[] = { fallback_argv[0], "-OO", "-m", "core.memory.mcp_host", sock_path, NULL };
        execv(argv[0], argv);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
}

static int send_hello(int fd) {
    struct buf b = {0};
    put(&b, "{\"env\":{", 8);
    int first = 1;
    for (char **e = environ; *e; e++) {
        char *eq = strchr(*e, '=');
        if (!eq) continue;
        if (!first) put(&b, ",", 1);
        first = 0;
        *eq = 0;
        put_json_string(&b, *e);
        *eq = '=';
        put(&b, ":", 1);
        put_json_string(&b, eq + 1);
    }
    put(&b, "}}\n", 3);
    int rc = write_all(fd, b.data, b.len);
    free(b.data);
    return rc;
}

/* A connection that has been greeted, starting the host server if none answers. */
static int ensure_conn(int may_start) {
    if (conn >= 0) return 0;
    int fd = try_connect();
    if (fd < 0 && may_start) {
        start_host();
        for (long waited = 0; fd < 0 && waited < START_WAIT_MS; waited += 5) {
            sleep_ms(5);
            fd = try_connect();
        }
    }
    if (fd < 0) return -1;
    if (send_hello(fd) < 0) { close(fd); return -1; }
    conn = fd;
    return 0;
}

static void drop_conn(void) {
    if (conn >= 0) close(conn);
    conn = -1;
}

/* One line to the host, its one-line answer back into *reply; -1 if the connection broke. */
static int exchange(const char *line, size_t n, struct buf *reply) {
    if (write_all(conn, line, n) < 0) return -1;
    reply->len = 0;
    char chunk[65536];
    for (;;) {
        ssize_t r = read(conn, chunk, sizeof chunk);
        if (r < 0) { if (errno == EINTR) continue; return -1; }
        if (r == 0) return -1;
        char *nl = memchr(chunk, '\n', (size_t)r);
        if (nl) {  /* the host answers one line per line and never sends ahead */
            put(reply, chunk, (size_t)(nl - chunk + 1));
            return 0;
        }
        put(reply, chunk, (size_t)r);
    }
}

/* The lines this process has read and not answered: the one in flight and what
 * stdin gave after it in the same read. Handed to the full server on fallback. */
static const char *inflight, *unsent;
static size_t inflight_len, unsent_len;

/* A new private file that no path names (a memfd on Linux, so even a read-only
 * disk has one), inherited across exec; -1 if none could be made. */
static int replay_file(void) {
#ifdef SYS_memfd_create
    int fd = (int)syscall(SYS_memfd_create, "sb-mcp-replay", 0);
    if (fd >= 0) return fd;
#endif
    char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 32];
    const char *slash = strrchr(sock_path, '/');
    int dir_len = slash ? (int)(slash - sock_path) : 1;
    snprintf(path, sizeof path, "%.*s/.sb-mcp-replay-XXXXXX", dir_len,
             slash ? sock_path : ".");
    int fd2 = mkstemp(path);  /* 0600, created anew (O_EXCL) */
    if (fd2 >= 0) unlink(path);
    return fd2;
}

/* Give the unanswered lines to the full server: it reads the file named by
 * SWITCHBOARD_MCP_REPLAY_FD before its stdin (core.agent.mcp_server.serve), so the
 * request in flight is answered, not lost. */
static void hand_over(void) {
    if (!inflight_len && !unsent_len) return;
    int fd = replay_file();
    if (fd >= 0 && write_all(fd, inflight, inflight_len) == 0 &&
        write_all(fd, unsent, unsent_len) == 0 && lseek(fd, 0, SEEK_SET) == 0) {
        char number[16];
        snprintf(number, sizeof number, "%d", fd);
        setenv("SWITCHBOARD_MCP_REPLAY_FD", number, 1);
        return;
    }
    fprintf(stderr, "switchboard mcp shim: %zu bytes of requests could not be handed to "
            "the full server; the client will not get their answers\n",
            inflight_len + unsent_len);
    if (fd >= 0) close(fd);
}

static void give_up(void) {
    drop_conn();
    hand_over();
    execv(fallback_argv[0], fallback_argv);
    perror("switchboard mcp shim: no agent-tool server");
    exit(69);
}

static void forward(const char *line, size_t n) {
    struct buf reply = {0};
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        if (ensure_conn(1) < 0) continue;
        if (exchange(line, n, &reply) == 0) {
            if (reply.len > 1 && write_all(1, reply.data, reply.len) < 0) exit(0);
            free(reply.data);
            return;
        }
        drop_conn();
    }
    free(reply.data);
    give_up();
}

static const char OVERSIZED[] =
    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"message larger "
    "than 4194304 bytes; send a smaller request (it was not read)\"}}\n";

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: sb-mcp-shim SOCKET PYTHON [ARGS...]: the fallback server\n");
        return 64;
    }
    signal(SIGPIPE, SIG_IGN);
    sock_path = argv[1];
    fallback_argv = argv + 2;
    if (strlen(sock_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) give_up();

    struct buf line = {0};
    int skipping = 0;
    char chunk[65536];
    for (;;) {
        ssize_t r = read(0, chunk, sizeof chunk);
        if (r < 0) { if (errno == EINTR) continue; break; }
        if (r == 0) break;
        char *p = chunk, *end = chunk + r;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t n = nl ? (size_t)(nl - p + 1) : (size_t)(end - p);
            if (skipping) {
                if (nl) skipping = 0;
            } else if (line.len + n > MAX_LINE + 1) {
                line.len = 0;
                if (write_all(1, OVERSIZED, sizeof OVERSIZED - 1) < 0) return 0;
                skipping = nl == NULL;
            } else {
                put(&line, p, n);
                if (nl) {
                    size_t i = 0;
                    while (i < line.len && (line.data[i] == ' ' || line.data[i] == '\t' ||
                                            line.data[i] == '\r' || line.data[i] == '\n')) i++;
                    if (i < line.len) {
                        inflight = line.data; inflight_len = line.len;
                        unsent = nl + 1; unsent_len = (size_t)(end - nl - 1);
                        forward(line.data, line.len);
                        inflight_len = unsent_len = 0;
                    }
                    line.len = 0;
                }
            }
            p += n;
        }
    }
    /* A last line without its newline is still one message (as readline() gives it). */
    if (line.len && !skipping) {
        put(&line, "\n", 1);
        inflight = line.data; inflight_len = line.len;
        forward(line.data, line.len);
    }
    drop_conn();
    return 0;
}
