[
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ok' } },
  'not an object',
  { apiVersion: 'v1', metadata: { name: 'no-kind' } },
]
