import { z } from 'zod';

// zod compiles a parser per object schema with `new Function` when it may, deciding as each
// schema is built. The console's CSP allows no eval (even zod's probe for it is a reported
// violation), so this runs before any schema exists: main.tsx imports it first.
z.config({ jitless: true });
