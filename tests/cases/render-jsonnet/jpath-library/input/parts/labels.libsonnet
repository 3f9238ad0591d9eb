{ app: 'web' }
