import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A subscriber lost in a partition: a TCP server that accepts every connection and never answers. */
export type BlackHole = {
  url: string;
  /** Connections accepted so far. */
  accepted: number;
  close(): Promise<void>;
};

export async function startBlackHole(): Promise<BlackHole> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    hole.accepted += 1;
    // Reads the request (so the sender is not blocked on a full buffer) and never writes a byte.
    socket.resume();
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const hole: BlackHole = {
    url: `http://127.0.0.1:${port}`,
    accepted: 0,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return hole;
}
