package server

// fileReserve is how many file descriptors MaxClients leaves for
// everything but clients: the listener, data files being saved or loaded,
// the log, and what the runtime opens (epoll, pipes).
const fileReserve = 64
