/*
 * Makes glibc's own resolver (getaddrinfo, what dns.lookup calls on libuv's thread pool) ask the
 * name server at PLANT_DNS_SERVER (an IPv4 address and port) instead of /etc/resolv.conf's: loaded
 * into the api with LD_PRELOAD, so a test can show what a name server that never answers does to
 * code that resolves with dns.lookup. glibc reads the nameservers an application sets in `_res`
 * after res_init(), per thread. /etc/hosts is still read first, and every other call is unchanged.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdlib.h>
#include <string.h>

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
  static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
  if (real == NULL) real = (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **))dlsym(RTLD_NEXT, "getaddrinfo");
  const char *server = getenv("PLANT_DNS_SERVER");
  const char *colon = server == NULL ? NULL : strrchr(server, ':');
  char host[INET_ADDRSTRLEN];
  if (colon != NULL && (size_t)(colon - server) < sizeof host) {
    memcpy(host, server, colon - server);
    host[colon - server] = '\0';
    res_init();
    _res.nscount = 1;
    _res.nsaddr_list[0].sin_family = AF_INET;
    _res.nsaddr_list[0].sin_port = htons((unsigned short)atoi(colon + 1));
    inet_pton(AF_INET, host, &_res.nsaddr_list[0].sin_addr);
  }
  return real(node, service, hints, res);
}
