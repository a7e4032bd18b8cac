import { createServer } from 'node:net';
import {
  createRestClient,
  createTrpcClient,
  type NewPlant,
  type Plant,
  PlantStoreError,
} from '../../src/index.ts';

type ConnectOptions = { baseUrl: string; token: string; fetch?: typeof fetch };

/** One client under test, seen through the single operation both clients share. */
export type ClientUnderTest = {
  name: string;
  /** The URL a failed create names in its error. */
  createUrl(baseUrl: string): string;
  connect(options: ConnectOptions): (plant: NewPlant) => Promise<Plant>;
};

/** Both clients: the contract suite runs once for each. */
export const clientsUnderTest: ClientUnderTest[] = [
  {
    name: 'REST client',
    createUrl: (baseUrl) => `${baseUrl}/plants`,
    connect(options) {
      const client = createRestClient(options);
      // The Plant both clients answer; REST's version and ETag are tested in whole-resource.test.ts.
      return async (plant) => {
        const { version, etag, ...answer } = await client.createPlant(plant);
        if (etag !== `"${version}"`) throw new Error(`the ETag ${etag} is not the version ${version}`);
        return answer;
      };
    },
  },
  {
    name: 'tRPC client',
    createUrl: (baseUrl) => `${baseUrl}/trpc/plants.create`,
    connect(options) {
      const client = createTrpcClient(options);
      return (plant) => client.plants.create.mutate(plant);
    },
  },
];

/** The error a call rejected with; fails the test unless it is a PlantStoreError. */
export async function rejectionOf(call: Promise<unknown>): Promise<PlantStoreError> {
  const error = await call.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof PlantStoreError))
    throw new Error(`expected a PlantStoreError, got ${String(error)}`);
  return error;
}

/** What a caller sees of a rejection, as a plain object to compare. */
export async function failureOf(call: Promise<unknown>) {
  const { name, status, error, serverMessage, method, url, message } = await rejectionOf(call);
  return { name, status, error, serverMessage, method, url, message };
}

/** A `fetch` that drops the Authorization header, as a misconfigured proxy would. */
export const fetchWithoutAuthorization: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.delete('authorization');
  return fetch(input, { ...init, headers });
};

/** A loopback port nothing listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
