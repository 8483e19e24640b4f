// Google's API Node client (the googleapis package) for the APIs the tests
// drive: `google.ml({ version, rootUrl, auth })` and
// `google.aiplatform(...)` build the very clients `import { google } from
// 'googleapis'` builds, with the package's own code (each API's module),
// but without loading the package's index, which requires its 300-odd
// other APIs: about a second of CPU for every file that imported it.
// Another API: add its module here (googleapis/build/src/apis/NAME/index.js).

import { aiplatform } from 'googleapis/build/src/apis/aiplatform/index.js';
import { ml } from 'googleapis/build/src/apis/ml/index.js';

// Each API function takes `this` as the GoogleApis instance its clients
// read their global options from (google._options: {} unless set).
export const google = { _options: {}, aiplatform, ml };
