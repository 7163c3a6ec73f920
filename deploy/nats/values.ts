// How deploy/nats/values.yaml gets its users: shared by `npm run nats:auth` (which writes
// the file) and the drift test (which checks that the checked-in file is what this renders).
// Only the auth block and the password variables are rendered; the rest is written by hand.
import { natsAuthorization, natsPasswordEnv, natsSecretKey, natsSecretName } from '@pcp/contracts';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { isMap, parseDocument } from 'yaml';

/** The chart values file. */
export const valuesPath = join(import.meta.dirname, 'values.yaml');

/** The deployment's subject prefix (NATS_SUBJECT_PREFIX in deploy/k8s/base/config.yaml). */
export const deploymentPrefix = 'pcp';

/**
 * `text` (the values file) with `config.merge.authorization` and the password variables of
 * `container.env` as @pcp/contracts renders them for the deployment prefix.
 * Each password is a variable the server reads from its environment, set from the user's
 * Secret; the chart writes `<< $VAR >>` unquoted into nats.conf.
 */
export async function renderValues(text: string): Promise<string> {
  const document = parseDocument(text);
  const authorization = natsAuthorization(
    deploymentPrefix,
    (user) => `<< $${natsPasswordEnv(user)} >>`,
  );
  document.setIn(['config', 'merge', 'authorization'], document.createNode(authorization));
  const env = document.getIn(['container', 'env']);
  for (const key of isMap(env) ? env.items.map((pair) => String(pair.key)) : []) {
    if (key.startsWith('NATS_PW_')) document.deleteIn(['container', 'env', key]);
  }
  for (const { user } of authorization.users) {
    document.setIn(
      ['container', 'env', natsPasswordEnv(user)],
      document.createNode({
        valueFrom: {
          secretKeyRef: { name: natsSecretName(user), key: natsSecretKey },
        },
      }),
    );
  }
  const config = await resolveConfig(valuesPath);
  return format(document.toString({ lineWidth: 0 }), { ...config, filepath: valuesPath });
}
