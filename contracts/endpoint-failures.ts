/**
 * Failure types of the endpoint activities and workflows beyond the ServiceErrorKinds. A leaf
 * module without imports, so workflow code can name them without bundling any activity code.
 */
export const ENDPOINT_FAILURE = {
  /** The endpoint id is not in the account (any more). */
  notFound: 'EndpointNotFound',
  /** deleteEndpoint was refused because workersMin or workersMax is not 0. */
  notScaledDown: 'EndpointNotScaledDown',
  /** More than one endpoint carries the name: which one is meant cannot be told. */
  duplicateName: 'DuplicateEndpointName',
  /** An endpoint of the requested name exists with another templateId: it is not adopted. */
  nameConflict: 'EndpointNameConflict',
  /** REST created an endpoint that GraphQL does not list yet; a retry finds it by name. */
  notListed: 'EndpointNotListed',
  /**
   * A workflow input (or its merge with the current endpoint) breaks a rule; details hold
   * { field, rule }. BadRequest, as for a job workflow's input and a ValidationError in activities.
   */
  invalidInput: 'BadRequest',
} as const;

export type EndpointFailureType = (typeof ENDPOINT_FAILURE)[keyof typeof ENDPOINT_FAILURE];
