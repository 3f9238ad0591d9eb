// An object of objects: one per key, in key order (jsonnet sorts fields).
{
  service: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' },
             spec: { ports: [{ port: 80 }] } },
  deployment: { apiVersion: 'apps/v1', kind: 'Deployment',
                metadata: { name: 'web' } },
  extras: { apiVersion: 'v1', kind: 'List', items: [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'extra' } },
  ] },
}
